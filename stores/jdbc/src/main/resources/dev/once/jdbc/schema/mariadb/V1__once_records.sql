-- Once idempotency records, MariaDB / MySQL (version 1).
-- ${table} is replaced by the configured table name, ${name} by its unqualified part.
--
-- Times (lease_until, created_at, updated_at, expires_at) are BIGINT microseconds since the Unix
-- epoch, floored by the store: exact, zone-free (DATETIME has no zone). Read them as timestamps
-- with FROM_UNIXTIME(expires_at / 1000000).
-- Keys are VARBINARY: compared byte for byte. A VARCHAR in a _ci or PAD SPACE collation would make
-- 'Key' = 'key' and 'key ' = 'key', merging distinct idempotency keys into one record.
CREATE TABLE IF NOT EXISTS ${table} (
  scope              VARBINARY(128) NOT NULL,
  tenant             VARBINARY(128) NOT NULL,
  idem_key           VARBINARY(255) NOT NULL,
  status             VARCHAR(11) CHARACTER SET ascii NOT NULL,
  fingerprint        BINARY(32) NOT NULL,
  token              BIGINT NOT NULL,
  lease_until        BIGINT NOT NULL,
  attempts           INT NOT NULL,
  checkpoint_name    VARCHAR(128) NULL,
  checkpoint_data    LONGBLOB NULL,
  outcome_kind       VARCHAR(7) CHARACTER SET ascii NULL,
  outcome_media_type TEXT NULL,
  outcome_body       LONGBLOB NULL,
  last_error         MEDIUMTEXT NULL,
  created_at         BIGINT NOT NULL,
  updated_at         BIGINT NOT NULL,
  expires_at         BIGINT NOT NULL,
  PRIMARY KEY (scope, tenant, idem_key),
  -- purgeExpired: DELETE … WHERE expires_at <= now ORDER BY expires_at LIMIT n.
  INDEX ${name}_expires_idx (expires_at),
  -- reapExpiredLeases: status = 'IN_PROGRESS' AND lease_until <= now.
  INDEX ${name}_reap_idx (status, lease_until),
  CONSTRAINT ${name}_status_chk CHECK (status IN ('IN_PROGRESS', 'COMPLETED', 'FAILED')),
  CONSTRAINT ${name}_outcome_chk CHECK (outcome_kind IN ('SUCCESS', 'FAILURE'))
) ENGINE = InnoDB DEFAULT CHARACTER SET = utf8mb4 COLLATE = utf8mb4_bin;
