-- errand's first schema.
--
-- Every table's key and every hot index begins with the instance, so that
-- instances can later be spread over several databases without a schema
-- change (docs/postgres.md, "Beyond one PostgreSQL"). Times are epoch milliseconds,
-- 0 when unset. Tables are STRICT: a value of the wrong type is an error, not
-- a silent conversion.

CREATE TABLE instances (
    id             TEXT    NOT NULL PRIMARY KEY,
    org            TEXT    NOT NULL,
    name           TEXT    NOT NULL,
    created_at     INTEGER NOT NULL,
    retention_days INTEGER NOT NULL,
    rate_limit     REAL    NOT NULL,
    max_in_flight  INTEGER NOT NULL,
    webhook_key    TEXT    NOT NULL,
    UNIQUE (org, name)
) STRICT, WITHOUT ROWID;

CREATE TABLE queues (
    instance_id         TEXT    NOT NULL,
    name                TEXT    NOT NULL,
    mode                TEXT    NOT NULL CHECK (mode IN ('push', 'pull')),
    target              TEXT,    -- JSON task.Target, NULL for none
    rate_per_second     REAL    NOT NULL,
    max_concurrent      INTEGER NOT NULL,
    max_attempts        INTEGER NOT NULL,
    min_backoff_seconds REAL    NOT NULL,
    max_backoff_seconds REAL    NOT NULL,
    max_doublings       INTEGER NOT NULL,
    max_age_seconds     INTEGER NOT NULL,
    deadline_seconds    INTEGER NOT NULL,
    dead_letter_queue   TEXT,    -- NULL for none
    target_control      INTEGER NOT NULL,
    paused              INTEGER NOT NULL,
    created_at          INTEGER NOT NULL,
    PRIMARY KEY (instance_id, name)
) STRICT, WITHOUT ROWID;

-- tasks keeps the columns every listing reads first and the large ones
-- (params, attempts, payload, result) last, so that a listing never walks a
-- payload's overflow pages. attempts is the JSON array of finished attempts:
-- the UPDATE that ends an attempt writes it, so an attempt costs no row.
--
-- tasks is a rowid table (its key (instance_id, id) is a unique index beside
-- it), measured against WITHOUT ROWID: the same CPU per task with ~150-byte
-- payloads, and 24% less per claim+finish with 4 KB payloads, since a
-- WITHOUT ROWID row keeps only ~1 KB in its b-tree page before spilling.
CREATE TABLE tasks (
    instance_id      TEXT    NOT NULL,
    id               TEXT    NOT NULL,
    queue            TEXT    NOT NULL,
    name             TEXT,    -- NULL when unnamed
    state            TEXT    NOT NULL CHECK (state IN ('PENDING', 'RUNNING', 'RETRY_WAIT', 'SUCCEEDED', 'FAILED', 'CANCELLED')),
    pull             INTEGER NOT NULL,
    attempt          INTEGER NOT NULL,
    max_attempts     INTEGER NOT NULL,
    run_at           INTEGER NOT NULL,
    created_at       INTEGER NOT NULL,
    started_at       INTEGER NOT NULL,
    deadline_at      INTEGER NOT NULL,
    finished_at      INTEGER NOT NULL,
    lease_id         TEXT    NOT NULL,
    lease_expires_at INTEGER NOT NULL,
    deadline_seconds INTEGER NOT NULL,
    source           TEXT    NOT NULL,
    depth            INTEGER NOT NULL,
    dead_letter_of   TEXT,
    last_error       TEXT    NOT NULL,
    target           TEXT,    -- JSON task.Target, NULL for the queue's
    params           BLOB,    -- raw JSON as sent, NULL for none
    attempts         TEXT,    -- JSON []task.Attempt, NULL for none
    payload          BLOB    NOT NULL, -- raw JSON as sent, byte for byte
    result           BLOB,    -- raw JSON as reported
    -- sort_at is the key a listing by state orders on: runAt for the
    -- unfinished states, finishedAt for the finished ones. Computed, not
    -- stored.
    sort_at          INTEGER NOT NULL GENERATED ALWAYS AS (
        CASE WHEN state IN ('SUCCEEDED', 'FAILED', 'CANCELLED') THEN finished_at ELSE run_at END
    ) VIRTUAL,
    PRIMARY KEY (instance_id, id)
) STRICT;

-- A name is unique in its queue while its record is kept.
CREATE UNIQUE INDEX tasks_name ON tasks (instance_id, queue, name) WHERE name IS NOT NULL;

-- Claims: the due tasks of one queue in runAt order. Only waiting tasks are
-- in it, so it stays as small as the backlog.
CREATE INDEX tasks_due ON tasks (instance_id, queue, run_at, id)
    WHERE state IN ('PENDING', 'RETRY_WAIT');

-- Listing by state (runAt ascending or finishedAt descending), counts by
-- state, and retention (finished tasks by finishedAt).
CREATE INDEX tasks_state ON tasks (instance_id, queue, state, sort_at, id);

-- Listing without a state, newest first; also the queue's tasks for purge.
CREATE INDEX tasks_created ON tasks (instance_id, queue, created_at, id);

-- Leases in flight: the rescuer's expired leases and the next expiry. Only
-- RUNNING tasks are in it, so it stays as small as the work in flight.
CREATE INDEX tasks_lease ON tasks (instance_id, queue, lease_expires_at)
    WHERE state = 'RUNNING';
