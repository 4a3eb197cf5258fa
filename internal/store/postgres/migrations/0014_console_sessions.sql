-- The web console's logins (store.ConsoleSessionStore), shared by every
-- node: the cookie holds a session's random id; the row holds the id's
-- SHA-256 and the session's API key sealed with a key derived from the id.
-- expires_at (epoch ms) ends it; a login removes the expired rows through
-- console_sessions_expiry. Like api_keys, a table of organizations' rows,
-- not of an instance's: on a cluster distributed by instance it is a
-- reference table.
CREATE TABLE console_sessions (
    id_hash    bytea  NOT NULL,
    sealed     bytea  NOT NULL,
    created_at bigint NOT NULL,
    expires_at bigint NOT NULL,
    CONSTRAINT console_sessions_pkey PRIMARY KEY (id_hash)
);

CREATE INDEX console_sessions_expiry ON console_sessions (expires_at);
