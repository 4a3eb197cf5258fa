-- Trigger rules (issue 13) and the chain outbox.
--
-- A rule adds tasks to queue (of its own instance) when its event happens:
-- a cron tick (kind schedule: cron, time_zone, last_tick_at, next_tick_at),
-- a call of its hook (kind hook: hook_token is the {hook} of the URL, unique
-- across instances like an API key's digest; hook_secret the Standard
-- Webhooks key or ''; hook_headers the JSON array of headers copied into
-- params), or a task of on_queue finishing (kind task).
CREATE TABLE triggers (
    instance_id   TEXT    NOT NULL,
    id            TEXT    NOT NULL,
    kind          TEXT    NOT NULL CHECK (kind IN ('schedule', 'hook', 'task')),
    queue         TEXT    NOT NULL,
    enabled       INTEGER NOT NULL,
    params        BLOB,   -- raw JSON object, NULL for none
    payload       BLOB,   -- raw JSON template, NULL for none
    cron          TEXT    NOT NULL,
    time_zone     TEXT    NOT NULL,
    last_tick_at  INTEGER NOT NULL,
    next_tick_at  INTEGER NOT NULL,
    hook_token    TEXT,   -- NULL unless kind = 'hook'
    hook_secret   TEXT    NOT NULL,
    hook_headers  TEXT    NOT NULL,
    on_queue      TEXT,   -- NULL unless kind = 'task'
    on_succeeded  INTEGER NOT NULL,
    on_failed     INTEGER NOT NULL,
    fired         INTEGER NOT NULL,
    error_count   INTEGER NOT NULL,
    last_error    TEXT    NOT NULL,
    last_error_at INTEGER NOT NULL,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    PRIMARY KEY (instance_id, id)
) STRICT, WITHOUT ROWID;

CREATE UNIQUE INDEX triggers_hook ON triggers (hook_token) WHERE hook_token IS NOT NULL;
-- The scheduler's next wake-up and its due rules, across instances.
CREATE INDEX triggers_due ON triggers (next_tick_at) WHERE kind = 'schedule' AND enabled = 1;
-- The finish's lookup of the task rules watching a queue.
CREATE INDEX triggers_on ON triggers (instance_id, on_queue) WHERE kind = 'task' AND enabled = 1;

-- The chain outbox: written by the transaction that finishes a task, one row
-- per rule that fires, removed by the transaction that adds the chained task.
-- The unique key makes a second write of the same finish (same task, rule and
-- finished_at) a no-op.
CREATE TABLE trigger_events (
    seq         INTEGER PRIMARY KEY,
    instance_id TEXT    NOT NULL,
    rule_id     TEXT    NOT NULL,
    task_id     TEXT    NOT NULL,
    state       TEXT    NOT NULL,
    finished_at INTEGER NOT NULL,
    UNIQUE (instance_id, task_id, rule_id, finished_at)
) STRICT;

-- Deleting a queue deletes the rules that add to it or watch it (and with
-- an instance go its queues, hence its rules), in the same transaction.
CREATE TRIGGER queues_delete_rules AFTER DELETE ON queues BEGIN
    DELETE FROM triggers WHERE instance_id = OLD.instance_id AND (queue = OLD.name OR on_queue = OLD.name);
END;

CREATE TRIGGER triggers_delete_events AFTER DELETE ON triggers BEGIN
    DELETE FROM trigger_events WHERE instance_id = OLD.instance_id AND rule_id = OLD.id;
END;
