-- tasks rebuilt without the expressions SQLite evaluated by building a
-- temporary b-tree on every row written.
--
-- An IN list of more than two values inside a table's own expressions (a
-- CHECK constraint, a generated column, a partial index's WHERE) is coded
-- as an ephemeral table filled with the list, and, unlike the same list in
-- a query's WHERE, it is filled again for every row: EXPLAIN of the 10-row
-- finish showed 14 OpenEphemeral, five per row (the state CHECK's six
-- values, sort_at for the old row and the new, tasks_done's predicate for
-- the old row and the new). A claim and a finish paid all five, an add
-- three. Here each becomes comparisons (two-value IN lists and OR chains
-- are coded inline):
--
-- * the state CHECK is an OR of equalities (SQLite cannot alter a CHECK in
--   place: the table is copied, every row and rowid kept);
-- * sort_at is gone: no index or statement has used it since 0004 dropped
--   tasks_state;
-- * tasks_done's predicate is written as a two-value IN OR an equality;
--   a statement that reads tasks_done names it the same way (stateTerm),
--   since SQLite proves a partial index's predicate only from the same
--   term.
--
-- BenchmarkWriteBreakdown/all, before and after on one machine (medians of
-- three alternated runs, CPU per task): the claim statement 24.8 -> 16.8
-- us, the finish 33.6 -> 24.3, the add 26.3 -> 21.5 (BENCHMARKS.md).
--
-- The copy keeps each row's rowid, so the order of rows and every key stay
-- as they were.

CREATE TABLE tasks_new (
    instance_id      TEXT    NOT NULL,
    id               TEXT    NOT NULL,
    queue            TEXT    NOT NULL,
    name             TEXT,    -- NULL when unnamed
    state            TEXT    NOT NULL CHECK (state = 'PENDING' OR state = 'RUNNING' OR state = 'RETRY_WAIT'
                                             OR state = 'SUCCEEDED' OR state = 'FAILED' OR state = 'CANCELLED'),
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
    PRIMARY KEY (instance_id, id)
) STRICT;

INSERT INTO tasks_new (rowid, instance_id, id, queue, name, state, pull, attempt, max_attempts, run_at, created_at,
    started_at, deadline_at, finished_at, lease_id, lease_expires_at, deadline_seconds, source, depth,
    dead_letter_of, last_error, target, params, attempts, payload, result)
SELECT rowid, instance_id, id, queue, name, state, pull, attempt, max_attempts, run_at, created_at,
    started_at, deadline_at, finished_at, lease_id, lease_expires_at, deadline_seconds, source, depth,
    dead_letter_of, last_error, target, params, attempts, payload, result FROM tasks;
DROP TABLE tasks;
ALTER TABLE tasks_new RENAME TO tasks;

CREATE UNIQUE INDEX tasks_name ON tasks (instance_id, queue, name) WHERE name IS NOT NULL;
CREATE INDEX tasks_created ON tasks (instance_id, queue, created_at, id);
CREATE INDEX tasks_due ON tasks (instance_id, queue, run_at, id, state)
    WHERE state IN ('PENDING', 'RETRY_WAIT');
CREATE INDEX tasks_retry ON tasks (instance_id, queue, run_at, id)
    WHERE state = 'RETRY_WAIT';
CREATE INDEX tasks_running ON tasks (instance_id, queue, run_at, id)
    WHERE state = 'RUNNING';
CREATE INDEX tasks_done ON tasks (instance_id, queue, state, finished_at, id)
    WHERE state IN ('SUCCEEDED', 'FAILED') OR state = 'CANCELLED';
