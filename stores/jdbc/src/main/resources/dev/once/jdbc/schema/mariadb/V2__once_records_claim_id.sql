-- Once idempotency records, MariaDB / MySQL (version 2): the claim id.
-- ${table} is replaced by the configured table name, ${name} by its unqualified part.
--
-- claim_id: the random id of the claim that last made the record IN_PROGRESS, so that the same
-- claim re-sent (its first answer lost) is recognised as its claimant's own. 0 for records
-- written before this version. Added as the last column: instant on MariaDB 10.3+ and MySQL 8.0.12+.
-- MySQL has no IF NOT EXISTS here: drop those three words there (createSchema() does).
ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS claim_id BIGINT NOT NULL DEFAULT 0;
