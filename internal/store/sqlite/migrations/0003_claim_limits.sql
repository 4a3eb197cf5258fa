-- The token bucket of a queue's ratePerSecond, kept with the queue so that
-- every claim, from any process, pays from the same bucket. rate_tokens < 0
-- means "full": a queue's first claims are not held back.
ALTER TABLE queues ADD COLUMN rate_tokens REAL NOT NULL DEFAULT -1;
ALTER TABLE queues ADD COLUMN rate_at INTEGER NOT NULL DEFAULT 0;
