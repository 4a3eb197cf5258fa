-- The message log of channel targets.
--
-- channel_heads holds each channel's last sequence number: an append
-- raises it by one in the transaction that inserts the message, under the
-- head row's lock, so numbers are dense and in commit order across nodes,
-- and never reused once messages are pruned. channel_messages holds the
-- retained window; a task appears at most once per channel (an attempt
-- retried after its append answers the first).
CREATE TABLE channel_heads (
    instance_id text   NOT NULL,
    channel     text   NOT NULL,
    last_seq    bigint NOT NULL,
    PRIMARY KEY (instance_id, channel)
);
CREATE TABLE channel_messages (
    instance_id text   NOT NULL,
    channel     text   NOT NULL,
    seq         bigint NOT NULL,
    task_id     text   NOT NULL,
    body        bytea  NOT NULL,
    created_at  bigint NOT NULL,
    PRIMARY KEY (instance_id, channel, seq)
);
CREATE UNIQUE INDEX channel_messages_task ON channel_messages (instance_id, channel, task_id);
-- Pruning (the operator's query, across instances) seeks each channel's
-- old messages; the index begins with the instance, as every index does.
CREATE INDEX channel_messages_age ON channel_messages (instance_id, channel, created_at);
