-- Usage per instance and UTC day (GET /v1/tasks/{instance}/usage).
--
-- Nodes count tasks added and deliveries in memory and add their counts to
-- the day's row every few seconds with an upsert, so the hot path never
-- writes here and several nodes add up. bytes_kept is the latest sample of
-- the bytes the instance keeps (payloads, params, results), taken at
-- bytes_at; a newer sample replaces an older one.
CREATE TABLE usage_days (
    instance_id text   NOT NULL,
    day         bigint NOT NULL, -- epoch ms of 00:00 UTC
    added       bigint NOT NULL DEFAULT 0,
    webhook     bigint NOT NULL DEFAULT 0,
    function    bigint NOT NULL DEFAULT 0,
    channel     bigint NOT NULL DEFAULT 0,
    pull        bigint NOT NULL DEFAULT 0,
    bytes_kept  bigint NOT NULL DEFAULT 0,
    bytes_at    bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (instance_id, day)
);
