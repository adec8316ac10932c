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
-- names, which a renamed table no longer matches); any CHECK of anyone else's stays. On a table
-- that still has one, ALTER TABLE holds an ACCESS EXCLUSIVE lock for an instant (no row is read
-- or rewritten); a table without them is not locked.
DO $$
DECLARE
  t regclass;
  drops text;
BEGIN
  -- The key createSchema() takes: two runs at once take turns (and IF EXISTS: a run that read the
  -- checks before another dropped them drops nothing).
  PERFORM pg_advisory_xact_lock(hashtext('once.createSchema:${table}'));
  t := to_regclass('${table}');
  IF t IS NULL THEN
    RETURN;
  END IF;
  SELECT string_agg(format('DROP CONSTRAINT IF EXISTS %I', conname), ', ') INTO drops
    FROM pg_constraint WHERE conrelid = t AND contype = 'c' AND pg_get_constraintdef(oid) IN (
      'CHECK ((status = ANY (ARRAY[''IN_PROGRESS''::text, ''COMPLETED''::text, ''FAILED''::text])))',
      'CHECK ((octet_length(fingerprint) = 32))',
      'CHECK ((outcome_kind = ANY (ARRAY[''SUCCESS''::text, ''FAILURE''::text])))');
  IF drops IS NOT NULL THEN
    EXECUTE format('ALTER TABLE %s %s', t, drops);
  END IF;
END $$;
