-- One state index per row version (the layout the PostgreSQL store has had
-- from its first schema).
--
-- 0001 kept tasks_state over every row, beside tasks_due and tasks_lease:
-- a claim changed four index entries (tasks_due out, tasks_state out and
-- in, tasks_lease in) and a finish three. Now each row version is in the
-- key, tasks_created and the one partial index of its state group (a
-- RETRY_WAIT one in two), so a claim moves one entry from tasks_due to
-- tasks_running and a finish one from tasks_running to tasks_done: the
-- writer's b-tree work per task falls by about a third.
--
-- tasks_due carries state last, so that listing and counting PENDING alone
-- walks it and skips the RETRY_WAIT entries without reading their rows.
-- RUNNING tasks are listed and counted through tasks_running in runAt
-- order; the rescuer reads the lease expiry of a queue's RUNNING rows from
-- the rows, as they are the work in flight.

DROP INDEX tasks_state;
DROP INDEX tasks_lease;
DROP INDEX tasks_due;

CREATE INDEX tasks_due ON tasks (instance_id, queue, run_at, id, state)
    WHERE state IN ('PENDING', 'RETRY_WAIT');

CREATE INDEX tasks_retry ON tasks (instance_id, queue, run_at, id)
    WHERE state = 'RETRY_WAIT';

CREATE INDEX tasks_running ON tasks (instance_id, queue, run_at, id)
    WHERE state = 'RUNNING';

CREATE INDEX tasks_done ON tasks (instance_id, queue, state, finished_at, id)
    WHERE state IN ('SUCCEEDED', 'FAILED', 'CANCELLED');
