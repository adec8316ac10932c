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
-- 151 bytes instead of 220, a key 683 instead of 762 (docs/benchmarks.md).
--
-- Column order is fixed when a table is made, and every statement of the store names its
-- columns, so a table in the earlier order works exactly as before, only logs more. This script
-- therefore remakes the table only where that loses nothing: a table still as versions 1 to 3
-- have just made it. It has exactly their columns in their order; it is owned by whoever runs
-- this, a plain table, logged, in the default tablespace, not partitioned or inherited; it has
-- no row, and has never had one (its file is empty: a check that no snapshot can hide, as a query
-- under REPEATABLE READ would); nothing depends on it or its types but its own indexes and
-- constraints; it has no index, constraint, option, comment, column grant, trigger or row
-- security of anyone else's. The checks that need the table's ACCESS EXCLUSIVE lock run under
-- it. Grants are kept (default privileges give the new table the same): should they come out
-- different, or should the drop meet a dependency, the remake is undone. Any other table is
-- left as it is, and a notice says why. An existing table that holds records keeps its order:
-- changing it means a rewrite of every row under that lock, which the store does not do.
DO $$
DECLARE
  t regclass;
  acl aclitem[];
BEGIN
  -- The key createSchema() takes: two runs at once, or a run beside createSchema(), take turns
  -- (each would otherwise hold the table's ACCESS SHARE lock and wait for the other's to upgrade).
  PERFORM pg_advisory_xact_lock(hashtext('once.createSchema:${table}'));
  t := to_regclass('${table}');
  -- Only a table with exactly the columns of versions 1 to 3, in their order (not an unrelated
  -- table of the same name, not one with a column of anyone else's, not one already in order).
  IF t IS NULL OR (SELECT array_agg(attname::text ORDER BY attnum) FROM pg_attribute
      WHERE attrelid = t AND attnum > 0 AND NOT attisdropped) IS DISTINCT FROM ARRAY['scope',
      'tenant', 'idem_key', 'status', 'fingerprint', 'token', 'lease_until', 'attempts',
      'checkpoint_name', 'checkpoint_data', 'outcome_kind', 'outcome_media_type', 'outcome_body',
      'last_error', 'created_at', 'updated_at', 'expires_at', 'claim_id', 'purge_after'] THEN
    RETURN;
  END IF;
  -- Catalog checks that need no lock first: someone else's table is left alone, never an error.
  IF EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = t AND (c.relkind <> 'r'
      OR c.relpersistence <> 'p'
      OR c.relowner <> (SELECT oid FROM pg_roles WHERE rolname = current_user))) THEN
    RAISE NOTICE 'once: ${table} is not ours; it keeps the column order of version 3';
    RETURN;
  END IF;
  IF EXISTS (SELECT 1 FROM ${table}) THEN
    RAISE NOTICE 'once: ${table} holds records; it keeps the column order of version 3';
    RETURN;
  END IF;
  LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE;
  -- pg_relation_size, not only a query: under REPEATABLE READ or SERIALIZABLE a query reads the
  -- snapshot taken before the lock, and misses a row committed while this waited for it.
  IF to_regclass('${table}') IS DISTINCT FROM t OR pg_relation_size(t) <> 0
      OR EXISTS (SELECT 1 FROM ${table})
      OR EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = t AND (c.relrowsecurity
        OR c.relispartition OR c.relhastriggers OR c.reltablespace <> 0 OR c.reloptions IS NOT NULL))
      OR EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = t AND attnum > 0
        AND (attacl IS NOT NULL OR attstattarget <> -1))
      OR EXISTS (SELECT 1 FROM pg_description WHERE objoid = t AND classoid = 'pg_class'::regclass)
      OR EXISTS (SELECT 1 FROM pg_inherits WHERE inhrelid = t OR inhparent = t)
      OR (SELECT count(*) FROM pg_constraint
        WHERE (conrelid = t AND contype <> 'n') OR confrelid = t) <> 4
      OR EXISTS (SELECT 1 FROM pg_depend d WHERE d.refclassid = 'pg_type'::regclass
        AND d.refobjid IN (SELECT oid FROM pg_type WHERE typrelid = t
          UNION SELECT typarray FROM pg_type WHERE typrelid = t) AND d.deptype <> 'i')
      OR EXISTS (SELECT 1 FROM pg_depend d WHERE d.refclassid = 'pg_class'::regclass
        AND d.refobjid = t AND NOT (d.classid IN ('pg_constraint'::regclass,
          'pg_type'::regclass, 'pg_attrdef'::regclass) OR (d.classid = 'pg_class'::regclass
          AND (SELECT relkind FROM pg_class WHERE oid = d.objid) IN ('i', 't'))))
      OR EXISTS (SELECT 1 FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
        WHERE i.indrelid = t AND ic.relname NOT IN (lower('${name}_pkey'),
          lower('${name}_reap_idx'), lower('${name}_purge_idx'))) THEN
    RAISE NOTICE 'once: ${table} is in use; it keeps the column order of version 3';
    RETURN;
  END IF;
  acl := (SELECT relacl FROM pg_class WHERE oid = t);
  BEGIN
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
    -- Grants (default privileges included) must come out the same, else undo the remake.
    IF (SELECT relacl FROM pg_class WHERE oid = to_regclass('${table}')) IS DISTINCT FROM acl THEN
      RAISE EXCEPTION 'grants differ';
    END IF;
  EXCEPTION WHEN dependent_objects_still_exist OR raise_exception THEN
    RAISE NOTICE 'once: ${table} is in use (%); it keeps the column order of version 3', SQLERRM;
  END;
END $$;
