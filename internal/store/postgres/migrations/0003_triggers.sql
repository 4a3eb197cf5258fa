-- Trigger rules (issue 13) and the chain outbox.
--
-- A rule adds tasks to queue (of its own instance) when its event happens:
-- a cron tick (kind schedule: cron, time_zone, last_tick_at, next_tick_at),
-- a call of its hook (kind hook: hook_token is the {hook} of the URL, unique
-- across instances like an API key's digest, so under Citus triggers_hook is
-- the one lookup that is not by instance; hook_secret the Standard Webhooks
-- key or ''; hook_headers the JSON array of headers copied into params), or
-- a task of on_queue finishing (kind task).
CREATE TABLE triggers (
    last_tick_at  bigint  NOT NULL,
    next_tick_at  bigint  NOT NULL,
    fired         bigint  NOT NULL,
    error_count   bigint  NOT NULL,
    last_error_at bigint  NOT NULL,
    created_at    bigint  NOT NULL,
    updated_at    bigint  NOT NULL,
    enabled       boolean NOT NULL,
    on_succeeded  boolean NOT NULL,
    on_failed     boolean NOT NULL,
    instance_id   text COLLATE "C" NOT NULL,
    id            text COLLATE "C" NOT NULL,
    kind          text NOT NULL CHECK (kind IN ('schedule', 'hook', 'task')),
    queue         text COLLATE "C" NOT NULL,
    cron          text NOT NULL,
    time_zone     text NOT NULL,
    hook_token    text COLLATE "C",  -- NULL unless kind = 'hook'
    hook_secret   text NOT NULL,
    hook_headers  text NOT NULL,
    on_queue      text COLLATE "C",  -- NULL unless kind = 'task'
    last_error    text NOT NULL,
    params        bytea,             -- raw JSON object, NULL for none
    payload       bytea,             -- raw JSON template, NULL for none
    CONSTRAINT triggers_pkey PRIMARY KEY (instance_id, id)
);

CREATE UNIQUE INDEX triggers_hook ON triggers (hook_token) WHERE hook_token IS NOT NULL;
-- The scheduler's next wake-up and its due rules, across instances.
CREATE INDEX triggers_due ON triggers (next_tick_at) WHERE kind = 'schedule' AND enabled;
-- The finish's lookup of the task rules watching a queue.
CREATE INDEX triggers_on ON triggers (instance_id, on_queue) WHERE kind = 'task' AND enabled;

-- The chain outbox: written by the transaction that finishes a task, one row
-- per rule that fires, removed by the transaction that adds the chained task.
-- The unique key makes a second write of the same finish (same task, rule and
-- finished_at) a no-op.
CREATE TABLE trigger_events (
    seq         bigint GENERATED ALWAYS AS IDENTITY,
    finished_at bigint NOT NULL,
    instance_id text COLLATE "C" NOT NULL,
    rule_id     text COLLATE "C" NOT NULL,
    task_id     text COLLATE "C" NOT NULL,
    state       text NOT NULL,
    CONSTRAINT trigger_events_pkey PRIMARY KEY (instance_id, seq),
    CONSTRAINT trigger_events_once UNIQUE (instance_id, task_id, rule_id, finished_at)
);
CREATE INDEX trigger_events_seq ON trigger_events (seq);

-- Deleting a queue deletes the rules that add to it or watch it (and with
-- an instance go its queues, hence its rules), in the same transaction; a
-- deleted rule takes its pending events with it.
CREATE FUNCTION errand_queue_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM triggers WHERE instance_id = OLD.instance_id AND (queue = OLD.name OR on_queue = OLD.name);
    RETURN OLD;
END $$;
CREATE TRIGGER queues_delete_rules AFTER DELETE ON queues FOR EACH ROW EXECUTE FUNCTION errand_queue_deleted();

CREATE FUNCTION errand_trigger_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM trigger_events WHERE instance_id = OLD.instance_id AND rule_id = OLD.id;
    RETURN OLD;
END $$;
CREATE TRIGGER triggers_delete_events AFTER DELETE ON triggers FOR EACH ROW EXECUTE FUNCTION errand_trigger_deleted();
