-- The liveness of the nodes using this database.
--
-- A node writes its row about once a second (beat_at, epoch ms); a node
-- whose row has not moved for a few seconds is declared dead by any other,
-- which retries the push attempts it held (their lease ids begin with the
-- node's id) and removes the row. On SQLite there is one node at a time:
-- the node that starts after a crash finds its predecessor's row silent and
-- frees its attempts a second later, instead of waiting out their leases. A node
-- that leaves gracefully removes its own row.
CREATE TABLE nodes (
    id         TEXT    NOT NULL PRIMARY KEY,
    started_at INTEGER NOT NULL,
    beat_at    INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
