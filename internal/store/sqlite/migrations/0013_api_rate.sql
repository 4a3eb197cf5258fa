-- Each instance's bucket of API calls (its rateLimit setting): a node takes
-- calls in small grants and spends them locally (store.APIRateStore), as
-- on PostgreSQL, where several nodes share it. tokens < 0 means never
-- used, hence full; at is the epoch ms of its last refill.
CREATE TABLE api_rate (
    instance_id TEXT    NOT NULL PRIMARY KEY,
    tokens      REAL    NOT NULL,
    at          INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
