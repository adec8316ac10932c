-- Once idempotency records, SQLite (version 2): the claim id.
-- ${table} is replaced by the configured table name, ${name} by its unqualified part.
--
-- claim_id: the random id of the claim that last made the record IN_PROGRESS, so that the same
-- claim re-sent (its first answer lost) is recognised as its claimant's own. 0 for records
-- written before this version. SQLite has no ADD COLUMN IF NOT EXISTS: apply this once
-- (createSchema() checks PRAGMA table_info first).
ALTER TABLE ${table} ADD COLUMN claim_id INTEGER NOT NULL DEFAULT 0;
