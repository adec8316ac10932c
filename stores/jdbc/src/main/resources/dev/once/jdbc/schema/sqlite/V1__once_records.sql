-- Once idempotency records, SQLite (version 1).
-- ${table} is replaced by the configured table name, ${name} by its unqualified part.
--
-- Times (lease_until, created_at, updated_at, expires_at) are INTEGER microseconds since the Unix
-- epoch, floored by the store. Read them with datetime(expires_at / 1000000, 'unixepoch').
-- TEXT compares byte for byte (BINARY collation), so keys are exact.
CREATE TABLE IF NOT EXISTS ${table} (
  scope              TEXT    NOT NULL,
  tenant             TEXT    NOT NULL,
  idem_key           TEXT    NOT NULL,
  status             TEXT    NOT NULL CHECK (status IN ('IN_PROGRESS', 'COMPLETED', 'FAILED')),
  fingerprint        BLOB    NOT NULL CHECK (length(fingerprint) = 32),
  token              INTEGER NOT NULL,
  lease_until        INTEGER NOT NULL,
  attempts           INTEGER NOT NULL,
  checkpoint_name    TEXT,
  checkpoint_data    BLOB,
  outcome_kind       TEXT CHECK (outcome_kind IN ('SUCCESS', 'FAILURE')),
  outcome_media_type TEXT,
  outcome_body       BLOB,
  last_error         TEXT,
  created_at         INTEGER NOT NULL,
  updated_at         INTEGER NOT NULL,
  expires_at         INTEGER NOT NULL,
  PRIMARY KEY (scope, tenant, idem_key)
);
-- purgeExpired: DELETE … WHERE rowid IN (SELECT rowid … WHERE expires_at <= now LIMIT n).
CREATE INDEX IF NOT EXISTS ${name}_expires_idx ON ${table} (expires_at);
-- reapExpiredLeases: status = 'IN_PROGRESS' AND lease_until <= now.
CREATE INDEX IF NOT EXISTS ${name}_reap_idx ON ${table} (status, lease_until);
