-- Once idempotency records, PostgreSQL (version 5): no CHECK constraints.
-- ${table} is replaced by the configured table name, ${name} by its unqualified part.
--
-- Version 1 checked status, outcome_kind and the fingerprint's length. PostgreSQL does not keep a
-- CHECK constraint compiled: every INSERT and UPDATE of the table parses each one from its stored
-- text and compiles it again before it evaluates it. Measured with perf on the claim insert and
-- completion of a key (docs/benchmarks.md), the three took 14% of the server process's CPU. The
-- store is the table's only writer, writes only these values, and refuses a record that holds any
-- other when it reads one (a row changed by hand is reported, never acted on), so the checks
-- caught nothing the store does not. NOT NULL stays: it costs no expression.
--
-- Only the three constraints version 1 made are dropped, found by their definitions (not their
-- names, which a renamed table no longer matches; read with only pg_catalog on the search path, so
-- that a function of the same name elsewhere cannot change how they print); any CHECK of anyone
-- else's stays. Dropping them is only a saving, so this script never fails for it and never holds
-- up the table: on a table this user does not own, or when the table's ACCESS EXCLUSIVE lock is
-- not granted within 200 ms (another transaction holds the table: every claim would queue behind
-- the waiting ALTER), it leaves the checks, says why in a NOTICE, and the next run (every
-- createSchema() runs this) tries again. The ALTER reads and rewrites no row; a table without the
-- checks is not locked at all.
DO $$
DECLARE
  t regclass;
  path text;
  waits text;
  drops text;
BEGIN
  -- The key createSchema() takes: two runs at once take turns (and IF EXISTS: a run that read the
  -- checks before another dropped them drops nothing).
  PERFORM pg_advisory_xact_lock(hashtext('once.createSchema:${table}'));
  t := to_regclass('${table}');
  IF t IS NULL THEN
    RETURN;
  END IF;
  path := current_setting('search_path');
  PERFORM set_config('search_path', 'pg_catalog', true);
  SELECT string_agg(format('DROP CONSTRAINT IF EXISTS %I', conname), ', ') INTO drops
    FROM pg_constraint WHERE conrelid = t AND contype = 'c' AND pg_get_constraintdef(oid) IN (
      'CHECK ((status = ANY (ARRAY[''IN_PROGRESS''::text, ''COMPLETED''::text, ''FAILED''::text])))',
      'CHECK ((octet_length(fingerprint) = 32))',
      'CHECK ((outcome_kind = ANY (ARRAY[''SUCCESS''::text, ''FAILURE''::text])))');
  PERFORM set_config('search_path', path, true);
  IF drops IS NULL THEN
    RETURN;
  END IF;
  IF NOT pg_has_role(current_user, (SELECT relowner FROM pg_class WHERE oid = t), 'USAGE') THEN
    RAISE NOTICE 'once: ${table} is not ours; it keeps the CHECK constraints of version 1';
    RETURN;
  END IF;
  BEGIN
    waits := current_setting('lock_timeout');
    PERFORM set_config('lock_timeout', '200ms', true);
    EXECUTE format('ALTER TABLE %s %s', t, drops);
    PERFORM set_config('lock_timeout', waits, true); -- (undone with the block on a failure)
  EXCEPTION WHEN lock_not_available OR insufficient_privilege THEN
    RAISE NOTICE 'once: ${table} keeps the CHECK constraints of version 1 for now (%)', SQLERRM;
  END;
END $$;
