-- Each instance's bucket of API calls (its rateLimit setting), shared by
-- every node: a node takes calls in small grants under the row's lock and
-- spends them locally (store.APIRateStore). tokens < 0 means never used,
-- hence full; at is the epoch ms of its last refill. A grant changes no
-- indexed column: a HOT update, which the fillfactor leaves room for.
CREATE TABLE api_rate (
    instance_id text COLLATE "C" NOT NULL,
    tokens      double precision NOT NULL,
    at          bigint           NOT NULL,
    CONSTRAINT api_rate_pkey PRIMARY KEY (instance_id)
) WITH (fillfactor = 50);
