-- errand's first PostgreSQL schema.
--
-- Every table's primary key and every hot index begins with the instance
-- (docs/postgres.md, "Beyond one PostgreSQL"), so that tasks and queues can later be
-- distributed by instance_id (Citus) or spread over clusters without a schema
-- change. instances and api_keys are small tables read by (org, name) and by
-- key digest: under Citus they are reference tables.
--
-- Times are epoch milliseconds from the engine's clock, 0 when unset.
-- Identifiers use the "C" collation: byte order, as the keyset cursors and the
-- SQLite backend expect, and cheaper comparisons in every index.

CREATE TABLE instances (
    id             text COLLATE "C" NOT NULL,
    org            text COLLATE "C" NOT NULL,
    name           text COLLATE "C" NOT NULL,
    created_at     bigint           NOT NULL,
    rate_limit     double precision NOT NULL,
    retention_days integer          NOT NULL,
    max_in_flight  integer          NOT NULL,
    webhook_key    text             NOT NULL,
    CONSTRAINT instances_pkey PRIMARY KEY (id),
    CONSTRAINT instances_org_name UNIQUE (org, name)
);

CREATE TABLE queues (
    instance_id         text COLLATE "C" NOT NULL,
    name                text COLLATE "C" NOT NULL,
    created_at          bigint           NOT NULL,
    max_age_seconds     bigint           NOT NULL,
    rate_per_second     double precision NOT NULL,
    min_backoff_seconds double precision NOT NULL,
    max_backoff_seconds double precision NOT NULL,
    max_concurrent      integer          NOT NULL,
    max_attempts        integer          NOT NULL,
    max_doublings       integer          NOT NULL,
    deadline_seconds    integer          NOT NULL,
    target_control      boolean          NOT NULL,
    paused              boolean          NOT NULL,
    mode                text             NOT NULL CHECK (mode IN ('push', 'pull')),
    -- The token bucket of ratePerSecond, kept with the queue so that every
    -- claim, from any node, pays from the same bucket; rate_tokens < 0 means
    -- never used, hence full.
    rate_tokens         double precision NOT NULL DEFAULT -1,
    rate_at             bigint           NOT NULL DEFAULT 0,
    target              jsonb,           -- task.Target, NULL for none
    dead_letter_queue   text COLLATE "C", -- NULL for none
    CONSTRAINT queues_pkey PRIMARY KEY (instance_id, name)
);

-- tasks: fixed-width columns first (no alignment padding), the small text
-- columns next, the large ones (attempts, params, payload, result) last.
-- Payload, params and result are bytea: the bytes come back exactly as they
-- were sent (jsonb would reformat them). attempts is the jsonb array of
-- finished attempts, appended by the UPDATE that ends an attempt, so an
-- attempt costs no row of its own.
--
-- A task's life is three row versions (add, claim, finish) plus one per
-- retry. Every transition changes state, which the listing indexes need, so
-- those cannot be HOT updates; the indexes are kept few and partial so that
-- each version enters as few of them as possible (docs/postgres.md). Lease
-- renewals (heartbeat, extend) change no indexed column and are HOT. The
-- fillfactor leaves room on each page for those new versions to land beside
-- the old ones. A queue table churns: it is vacuumed once 1% of its rows
-- are dead (not the default 20%), which keeps the dead entries that claims
-- leave at the head of tasks_due few.
CREATE TABLE tasks (
    run_at           bigint  NOT NULL,
    created_at       bigint  NOT NULL,
    started_at       bigint  NOT NULL,
    deadline_at      bigint  NOT NULL,
    finished_at      bigint  NOT NULL,
    lease_expires_at bigint  NOT NULL,
    attempt          integer NOT NULL,
    max_attempts     integer NOT NULL,
    deadline_seconds integer NOT NULL,
    depth            integer NOT NULL,
    pull             boolean NOT NULL,
    instance_id      text COLLATE "C" NOT NULL,
    id               text COLLATE "C" NOT NULL,
    queue            text COLLATE "C" NOT NULL,
    state            text COLLATE "C" NOT NULL CHECK (state IN ('PENDING', 'RUNNING', 'RETRY_WAIT', 'SUCCEEDED', 'FAILED', 'CANCELLED')),
    name             text COLLATE "C",  -- NULL when unnamed
    lease_id         text COLLATE "C" NOT NULL,
    source           text    NOT NULL,
    dead_letter_of   text COLLATE "C",  -- NULL when not a dead-letter copy
    last_error       text    NOT NULL,
    target           jsonb,             -- task.Target, NULL for the queue's
    attempts         jsonb   NOT NULL DEFAULT '[]',
    params           bytea,             -- raw JSON as sent, NULL for none
    payload          bytea   NOT NULL,  -- raw JSON as sent, byte for byte
    result           bytea,             -- raw JSON as reported
    CONSTRAINT tasks_pkey PRIMARY KEY (instance_id, id)
) WITH (fillfactor = 85, autovacuum_vacuum_scale_factor = 0.01, autovacuum_analyze_scale_factor = 0.02);

-- A name is unique in its queue while its record is kept.
CREATE UNIQUE INDEX tasks_name ON tasks (instance_id, queue, name) WHERE name IS NOT NULL;

-- Besides the key and tasks_created, a PENDING, RUNNING or finished row
-- version is in exactly one of the state indexes below and a RETRY_WAIT one
-- in two, so an add, a claim and a finish each enter three indexes.

-- Waiting tasks: claims and the dispatcher's next wake-up take a queue's
-- PENDING and RETRY_WAIT rows together in runAt order; listing and counting
-- PENDING walk the same order and skip the RETRY_WAIT rows by the included
-- state. Only waiting rows are in it, so it is as small as the backlog.
CREATE INDEX tasks_due ON tasks (instance_id, queue, run_at, id) INCLUDE (state)
    WHERE state IN ('PENDING', 'RETRY_WAIT');

-- Tasks waiting out a backoff, for listing and counting RETRY_WAIT alone
-- (a failing target can leave many of them behind a large backlog).
CREATE INDEX tasks_retry ON tasks (instance_id, queue, run_at, id)
    WHERE state = 'RETRY_WAIT';

-- Attempts in flight: listing and counting RUNNING (soonest runAt first),
-- the rescuer's expired leases and the next expiry. Only RUNNING rows are in
-- it, so it is as small as the work in flight. It does not hold
-- lease_expires_at: the heartbeat that renews a push attempt's lease every
-- few seconds, and a pull worker's extend, change only that column, so they
-- are HOT updates that touch no index at all; the rescuer reads the expiry
-- of a queue's few RUNNING rows from the rows.
CREATE INDEX tasks_running ON tasks (instance_id, queue, run_at, id)
    WHERE state = 'RUNNING';

-- Finished tasks: listing and counting by state, latest finishedAt first,
-- and retention (finished tasks by finishedAt).
CREATE INDEX tasks_done ON tasks (instance_id, queue, state, finished_at, id)
    WHERE state IN ('SUCCEEDED', 'FAILED', 'CANCELLED');

-- Listing without a state, newest first; also a queue's tasks for purge.
CREATE INDEX tasks_created ON tasks (instance_id, queue, created_at, id);

-- API keys belong to an organization, not an instance. Only the SHA-256
-- digest of a secret is kept.
CREATE TABLE api_keys (
    id         text COLLATE "C" NOT NULL,
    org        text COLLATE "C" NOT NULL,
    created_at bigint NOT NULL,
    revoked_at bigint NOT NULL,   -- 0 while valid
    digest     bytea  NOT NULL,
    prefix     text   NOT NULL,
    grants     jsonb  NOT NULL,   -- [{"instance": …, "role": …}]
    CONSTRAINT api_keys_pkey PRIMARY KEY (id),
    CONSTRAINT api_keys_digest UNIQUE (digest)
);

CREATE INDEX api_keys_org ON api_keys (org, created_at, id);
