-- The functions that connected workers serve, per node.
--
-- Each node routes function attempts to its own connections; this table
-- lets any node answer whether some node serves a function (a task that
-- waits for one shows "no worker serves app/x"). A node replaces its rows
-- when its workers change and refreshes seen_at every few seconds; rows
-- not seen for a while are ignored, and removed after an hour. An embedded
-- program's in-process functions serve every instance: instance_id '*'.
CREATE TABLE workers (
    instance_id TEXT    NOT NULL,
    function    TEXT    NOT NULL,
    node        TEXT    NOT NULL,
    slots       INTEGER NOT NULL,
    seen_at     INTEGER NOT NULL,
    PRIMARY KEY (instance_id, function, node)
) WITHOUT ROWID;
CREATE INDEX workers_node ON workers (node);
