-- A hook rule's own signature scheme (task.HookSignature as JSON: header,
-- hash, encoding, prefix, idHeader), or '' for the senders errand reads by
-- name. A constant default: no table rewrite.
ALTER TABLE triggers ADD COLUMN hook_signature text NOT NULL DEFAULT '';
