-- The message log of channel targets.
--
-- channel_heads holds each channel's last sequence number: an append
-- raises it by one in the transaction that inserts the message, so numbers
-- are dense, in commit order, and never reused once messages are pruned.
-- channel_messages holds the retained window; a task appears at most once
-- per channel (an attempt retried after its append answers the first).
CREATE TABLE channel_heads (
    instance_id TEXT    NOT NULL,
    channel     TEXT    NOT NULL,
    last_seq    INTEGER NOT NULL,
    PRIMARY KEY (instance_id, channel)
) WITHOUT ROWID;
CREATE TABLE channel_messages (
    instance_id TEXT    NOT NULL,
    channel     TEXT    NOT NULL,
    seq         INTEGER NOT NULL,
    task_id     TEXT    NOT NULL,
    body        BLOB    NOT NULL,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (instance_id, channel, seq)
);
CREATE UNIQUE INDEX channel_messages_task ON channel_messages (instance_id, channel, task_id);
-- Pruning seeks each channel's old messages (the index begins with the
-- instance, as every index does).
CREATE INDEX channel_messages_age ON channel_messages (instance_id, channel, created_at);
