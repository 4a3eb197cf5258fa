-- A hook rule's own signature scheme (task.HookSignature as JSON: header,
-- hash, encoding, prefix, idHeader), or '' for the senders errand reads by
-- name.
ALTER TABLE triggers ADD COLUMN hook_signature TEXT NOT NULL DEFAULT '';
