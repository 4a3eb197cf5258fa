-- A trigger rule's priority: the priority of the tasks it adds (0–9).
ALTER TABLE triggers ADD COLUMN priority smallint NOT NULL DEFAULT 0;
