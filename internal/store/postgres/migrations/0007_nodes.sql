-- The liveness of the nodes sharing this database.
--
-- Every node upserts its row about once a second (beat_at, epoch ms of the
-- engine's clock, which is the database's); a node whose row has not moved
-- for a few seconds is declared dead by any other, which retries the push
-- attempts it held (their lease ids begin with the node's id) and removes
-- the row. A node that leaves gracefully removes its own row. The table
-- holds one row per live node and each beat changes no indexed column: a
-- HOT update, which the fillfactor leaves room for.
CREATE TABLE nodes (
    id         text COLLATE "C" NOT NULL,
    started_at bigint           NOT NULL,
    beat_at    bigint           NOT NULL,
    CONSTRAINT nodes_pkey PRIMARY KEY (id)
) WITH (fillfactor = 50);
