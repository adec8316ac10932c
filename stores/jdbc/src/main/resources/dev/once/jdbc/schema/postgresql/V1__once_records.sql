-- Once idempotency records, PostgreSQL (version 1).
-- ${table} is replaced by the configured table name, ${name} by its unqualified part.
--
-- Times (lease_until, created_at, updated_at, expires_at) are BIGINT microseconds since the Unix
-- epoch, floored by the store: exact in every driver and dialect (pgjdbc would round a timestamptz
-- parameter's nanoseconds to micros, moving exact boundaries). Read them as timestamps with
-- to_timestamp(expires_at / 1e6).
-- Keys use the "C" collation: byte-wise comparison, no locale surprises, faster index.
CREATE TABLE IF NOT EXISTS ${table} (
  scope              text COLLATE "C" NOT NULL,
  tenant             text COLLATE "C" NOT NULL,
  idem_key           text COLLATE "C" NOT NULL,
  status             text   NOT NULL CHECK (status IN ('IN_PROGRESS', 'COMPLETED', 'FAILED')),
  fingerprint        bytea  NOT NULL CHECK (octet_length(fingerprint) = 32),
  token              bigint NOT NULL,
  lease_until        bigint NOT NULL,
  attempts           integer NOT NULL,
  checkpoint_name    text,
  checkpoint_data    bytea,
  outcome_kind       text CHECK (outcome_kind IN ('SUCCESS', 'FAILURE')),
  outcome_media_type text,
  outcome_body       bytea,
  last_error         text,
  created_at         bigint NOT NULL,
  updated_at         bigint NOT NULL,
  expires_at         bigint NOT NULL,
  PRIMARY KEY (scope, tenant, idem_key)
);
-- BRIN, not B-tree: expires_at and lease_until grow with the time a row is written, so block
-- ranges summarise them well; a BRIN index is a fraction of a B-tree's size, costs next to nothing
-- per insert, and (PostgreSQL 16 on) does not block HOT updates, so a completion that only changes
-- the row in place need not touch any index.
-- purgeExpired: DELETE … WHERE expires_at <= now (bitmap scan of the BRIN), in bounded batches.
CREATE INDEX IF NOT EXISTS ${name}_expires_idx ON ${table} USING brin (expires_at);
-- reapExpiredLeases: status = 'IN_PROGRESS' AND lease_until <= now (the status is a filter on the
-- BRIN's bitmap scan of lease_until).
CREATE INDEX IF NOT EXISTS ${name}_reap_idx ON ${table} USING brin (lease_until);
