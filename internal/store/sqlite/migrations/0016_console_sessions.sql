-- The web console's logins (store.ConsoleSessionStore): the cookie holds a
-- session's random id; the row holds the id's SHA-256 and the session's API
-- key sealed with a key derived from the id. expires_at (epoch ms) ends it;
-- a login removes the expired rows through console_sessions_expiry.
CREATE TABLE console_sessions (
    id_hash    BLOB    NOT NULL PRIMARY KEY,
    sealed     BLOB    NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

CREATE INDEX console_sessions_expiry ON console_sessions (expires_at);
