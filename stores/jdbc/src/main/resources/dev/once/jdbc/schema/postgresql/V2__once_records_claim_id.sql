-- Once idempotency records, PostgreSQL (version 2): the claim id.
-- ${table} is replaced by the configured table name, ${name} by its unqualified part.
--
-- claim_id: the random id of the claim that last made the record IN_PROGRESS, so that the same
-- claim re-sent (its first answer lost) is recognised as its claimant's own. 0 for records
-- written before this version. A constant default: adding the column rewrites no rows
-- (PostgreSQL 11 on), but ALTER TABLE holds an ACCESS EXCLUSIVE lock for that instant.
ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS claim_id bigint NOT NULL DEFAULT 0;
