-- Once idempotency records, PostgreSQL (version 4): a column order that logs less per write.
-- ${table} is replaced by the configured table name, ${name} by its unqualified part.
--
-- PostgreSQL logs an updated row version from its first changed byte to its last (an unchanged
-- prefix and suffix are left out when the new version stays on the same page, as a HOT update
-- does). Versions 1 to 3 put status fourth and expires_at seventeenth, so every completion logged
-- the fingerprint, token, lease, attempts and creation time between them again (about 70 bytes).
-- Version 4 puts first what no completion, failure or heartbeat changes (the checkpoint among
-- them: it may be large, and only a checkpoint changes it), then the lease, then what a completion
-- or failure changes, updated_at and expires_at last: a completion logs from status on, a
-- heartbeat from lease_until on. Measured with benchmarks/wal/wal-per-key.sh: a completion logs
-- 151 bytes instead of 220, a key 680 instead of 762 (docs/benchmarks.md).
--
-- Column order is fixed when a table is made, and every statement of the store names its
-- columns, so a table in the earlier order works exactly as before, only logs more. This script
-- therefore remakes the table only where that loses nothing: a table still as versions 1 to 3
-- have just made it (no row, no grant, no row security, nothing depending on it but its own
-- indexes and constraints, no index of anyone else's, owned by whoever runs this). It takes the
-- table's ACCESS EXCLUSIVE lock and checks again under it, so a row committed meanwhile keeps
-- the table as it is. Any other table is left as it is, and a notice says so. To remake a table
-- that holds records, copy them into a table made by this layout at a quiet time.
DO $$
DECLARE
  t regclass := to_regclass('${table}');
BEGIN
  IF t IS NULL OR (SELECT attnum FROM pg_attribute WHERE attrelid = t AND attname = 'status')
      > (SELECT attnum FROM pg_attribute WHERE attrelid = t AND attname = 'fingerprint') THEN
    RETURN; -- no table, or already in this order
  END IF;
  IF EXISTS (SELECT 1 FROM ${table}) THEN
    RAISE NOTICE 'once: ${table} holds records; it keeps the column order of version 3';
    RETURN;
  END IF;
  LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE;
  IF EXISTS (SELECT 1 FROM ${table})
      OR EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = t AND (c.relkind <> 'r'
        OR c.relpersistence <> 'p' OR c.relacl IS NOT NULL OR c.relrowsecurity
        OR c.relispartition OR c.relhastriggers OR c.reltablespace <> 0
        OR c.relowner <> (SELECT oid FROM pg_roles WHERE rolname = current_user)))
      OR EXISTS (SELECT 1 FROM pg_inherits WHERE inhrelid = t OR inhparent = t)
      OR EXISTS (SELECT 1 FROM pg_constraint WHERE confrelid = t)
      OR EXISTS (SELECT 1 FROM pg_depend d WHERE d.refclassid = 'pg_type'::regclass
        AND d.refobjid = (SELECT reltype FROM pg_class WHERE oid = t) AND d.deptype <> 'i')
      OR EXISTS (SELECT 1 FROM pg_depend d WHERE d.refclassid = 'pg_class'::regclass
        AND d.refobjid = t AND d.classid NOT IN ('pg_class'::regclass,
          'pg_constraint'::regclass, 'pg_type'::regclass, 'pg_attrdef'::regclass))
      OR EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = t
        AND i.indexrelid::regclass::text NOT IN ('${table}_pkey', '${table}_reap_idx',
          '${table}_purge_idx', '${name}_pkey', '${name}_reap_idx', '${name}_purge_idx')) THEN
    RAISE NOTICE 'once: ${table} is in use; it keeps the column order of version 3';
    RETURN;
  END IF;
  DROP TABLE ${table};
  CREATE TABLE ${table} (
    scope              text COLLATE "C" NOT NULL,
    tenant             text COLLATE "C" NOT NULL,
    idem_key           text COLLATE "C" NOT NULL,
    fingerprint        bytea  NOT NULL CHECK (octet_length(fingerprint) = 32),
    checkpoint_name    text,
    checkpoint_data    bytea,
    token              bigint NOT NULL,
    claim_id           bigint NOT NULL DEFAULT 0,
    created_at         bigint NOT NULL,
    purge_after        bigint NOT NULL DEFAULT 0,
    lease_until        bigint NOT NULL,
    attempts           integer NOT NULL,
    status             text   NOT NULL CHECK (status IN ('IN_PROGRESS', 'COMPLETED', 'FAILED')),
    last_error         text,
    outcome_kind       text CHECK (outcome_kind IN ('SUCCESS', 'FAILURE')),
    outcome_media_type text,
    outcome_body       bytea,
    updated_at         bigint NOT NULL,
    expires_at         bigint NOT NULL,
    PRIMARY KEY (scope, tenant, idem_key)
  );
  CREATE INDEX ${name}_reap_idx ON ${table} USING brin (lease_until);
  CREATE INDEX ${name}_purge_idx ON ${table} (purge_after);
END $$;
