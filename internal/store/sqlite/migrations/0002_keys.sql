-- API keys (issue 3: tenancy).
--
-- A key belongs to an organization, not to an instance: this is the one
-- table whose key does not begin with an instance, and it is read only by
-- digest (every authenticated call), by organization (`errand keys list`)
-- and by id (`errand keys revoke`). Only the SHA-256 digest of a secret is
-- stored; prefix is its first characters, for the operator to recognise it.
-- grants is the JSON array [{"instance": "jobs", "role": "full"}, …].
-- revoked_at is 0 while the key is valid: revoking is an UPDATE of this
-- row, so every reader of the store refuses the key from that commit on.

CREATE TABLE api_keys (
    id         TEXT    NOT NULL PRIMARY KEY,
    org        TEXT    NOT NULL,
    digest     BLOB    NOT NULL UNIQUE CHECK (length(digest) = 32),
    prefix     TEXT    NOT NULL,
    grants     TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

CREATE INDEX api_keys_org ON api_keys (org, created_at, id);
