-- tasks_created leaves RUNNING row versions out.
--
-- A claim writes a task's RUNNING version and a finish its final one; each
-- version that is not HOT enters every index whose predicate it meets, and
-- tasks_created (whole, until now) took an entry of every version, beside
-- the entries of the versions before it. BenchmarkWriteBreakdown measured
-- that entry at about a third of a claim's PostgreSQL time. Without the
-- RUNNING versions, the listing without a state, the queue activity's adds
-- and a purge take a queue's RUNNING tasks from tasks_running, which holds
-- them all (docs/postgres.md, "Indexes").
DROP INDEX tasks_created;
CREATE INDEX tasks_created ON tasks (instance_id, queue, created_at, id) WHERE state <> 'RUNNING';
