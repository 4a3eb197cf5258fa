-- A task's priority: a queue's due tasks are claimed from the highest
-- priority down (1–9), each priority in runAt order, and the tasks of the
-- default priority (0) after them, in runAt order through tasks_due.
--
-- Only prioritized waiting rows enter tasks_urgent, so a queue that never
-- uses priorities keeps it empty and a claim's look into it is one probe.
ALTER TABLE tasks ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
CREATE INDEX tasks_urgent ON tasks (instance_id, queue, priority DESC, run_at, id)
    WHERE state IN ('PENDING', 'RETRY_WAIT') AND priority > 0;
