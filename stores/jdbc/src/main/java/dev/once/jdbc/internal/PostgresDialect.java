package dev.once.jdbc.internal;

import dev.once.IdempotencyKey;
import dev.once.spi.Completion;
import dev.once.spi.EpochMicros;
import dev.once.spi.HeldClaim;
import dev.once.spi.IdempotencyRecord;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import java.util.function.ToLongFunction;

/**
 * PostgreSQL. A lease-mode claim is a plain {@code INSERT … ON CONFLICT DO NOTHING} in autocommit
 * (one round trip for a new key), followed by a read of the existing row only on conflict, or,
 * while most recent claims met an existing row, the read first ({@link ClaimOrder}); transactional
 * mode uses {@link #transactionalClaimSql}, one statement that also reads the existing row. A
 * decision that writes then runs {@code SELECT … FOR UPDATE}, decide, {@code UPDATE}, commit. A
 * batch inserts every absent key with one {@code INSERT … SELECT FROM unnest(…)} and locks the others
 * with one {@code SELECT … ORDER BY key FOR UPDATE}. Schema version 3's {@code purge_after} keeps
 * every completion and failure clear of indexed columns, so they are HOT updates.
 */
final class PostgresDialect extends Dialect {

  private final String insertAllSql;
  private final String lockAllSql;
  private final String readAllSql;
  private final String completeAllSql;
  private final String completeAllWithinSql;
  private final String extendAllSql;
  private final String purgeSql;
  private final String reapSql;
  private final String backfillSql;

  PostgresDialect(List<String> schemaResources, TableName table) {
    super("POSTGRESQL", schemaResources, table, true);
    String t = table.qualified();
    insertAllSql = "INSERT INTO " + t + " (scope, tenant, idem_key, status, fingerprint, token,"
        + " lease_until, attempts, created_at, updated_at, expires_at, claim_id, purge_after)"
        + " SELECT u.scope, u.tenant, u.idem_key, 'IN_PROGRESS', u.fingerprint, u.token,"
        + " u.lease_until, 1, u.created_at, u.created_at, u.expires_at, u.claim_id, u.expires_at"
        + " FROM unnest(?::text[], ?::text[], ?::text[], ?::bytea[], ?::int8[], ?::int8[],"
        + " ?::int8[], ?::int8[], ?::int8[])"
        + " AS u(scope, tenant, idem_key, fingerprint, token, lease_until, created_at, expires_at,"
        + " claim_id)"
        + " ON CONFLICT (scope, tenant, idem_key) DO NOTHING"
        + " RETURNING scope, tenant, idem_key";
    readAllSql = "SELECT " + Rows.COLUMNS + " FROM " + t
        + " WHERE (scope, tenant, idem_key) IN"
        + " (SELECT * FROM unnest(?::text[], ?::text[], ?::text[]))";
    lockAllSql = readAllSql + " ORDER BY scope, tenant, idem_key FOR UPDATE";
    // One statement for a batch of completions: each row is updated only if IN_PROGRESS under
    // its own token; RETURNING names the ones that were, the rest lost their lease.
    completeAllSql = "UPDATE " + t + " AS r SET status = 'COMPLETED', outcome_kind = v.kind,"
        + " outcome_media_type = v.media_type, outcome_body = v.body, updated_at = ?,"
        + " expires_at = ?, purge_after = LEAST(r.purge_after, ?)"
        + " FROM unnest(?::text[], ?::text[], ?::text[], ?::int8[], ?::text[], ?::text[],"
        + " ?::bytea[]) AS v(scope, tenant, idem_key, token, kind, media_type, body)"
        + " WHERE r.scope = v.scope AND r.tenant = v.tenant AND r.idem_key = v.idem_key"
        + " AND r.token = v.token AND r.status = 'IN_PROGRESS'"
        + " RETURNING r.scope, r.tenant, r.idem_key";
    // The same, waiting at most the first parameter (ms) for a lock another transaction holds:
    // two statements that pgjdbc sends with one Sync, so in autocommit they are one implicit
    // transaction and one round trip. set_config is transaction-local, so the setting goes with
    // that transaction; it runs before the UPDATE is even parsed, which takes the table's lock (a
    // CTE inside the UPDATE was set too late for a table lock, found by review). SET LOCAL would
    // need an explicit transaction: three round trips.
    completeAllWithinSql = "SELECT set_config('lock_timeout', ?, true); " + completeAllSql;
    // One statement for a batch heartbeat: each row extended only if IN_PROGRESS under its token.
    extendAllSql = "UPDATE " + t + " AS r SET lease_until = ?, updated_at = ?,"
        + " expires_at = GREATEST(r.expires_at, ?)"
        + " FROM unnest(?::text[], ?::text[], ?::text[], ?::int8[])"
        + " AS v(scope, tenant, idem_key, token)"
        + " WHERE r.scope = v.scope AND r.tenant = v.tenant AND r.idem_key = v.idem_key"
        + " AND r.token = v.token AND r.status = 'IN_PROGRESS'"
        + " RETURNING r.scope, r.tenant, r.idem_key";
    // Candidates in purge_after order (its B-tree, schema version 3): purge_after <= expires_at,
    // so every expired row is one, and the batch stops at its limit. SKIP LOCKED: a row locked by
    // a claim is being decided right now; purge it next time.
    purgeSql = "DELETE FROM " + t + " WHERE (scope, tenant, idem_key) IN"
        + " (SELECT scope, tenant, idem_key FROM " + t + " WHERE purge_after <= ?"
        + " AND expires_at <= ? ORDER BY purge_after LIMIT ? FOR UPDATE SKIP LOCKED)"
        + " AND expires_at <= ?";
    backfillSql = "UPDATE " + t + " SET purge_after = expires_at"
        + " WHERE (scope, tenant, idem_key) IN (SELECT scope, tenant, idem_key FROM " + t
        + " WHERE purge_after = 0 LIMIT ? FOR UPDATE SKIP LOCKED) AND purge_after = 0";
    reapSql = "UPDATE " + t + " SET status = 'FAILED', last_error = 'lease expired', updated_at = ?"
        + " WHERE (scope, tenant, idem_key) IN"
        + " (SELECT scope, tenant, idem_key FROM " + t
        + " WHERE status = 'IN_PROGRESS' AND lease_until <= ?"
        + " ORDER BY lease_until LIMIT ? FOR UPDATE SKIP LOCKED)"
        + " AND status = 'IN_PROGRESS' AND lease_until <= ?";
  }

  /**
   * Transactional mode's claim ({@link TxSql}) as one statement, one round trip, with
   * {@code lockTimeout} (a {@code lock_timeout} value) bounding its wait for a concurrent claim
   * of the key, and only its own:
   *
   * <ol>
   *   <li>{@code lt} saves the session's {@code lock_timeout} and sets ours, transaction-locally
   *       (as {@code SET LOCAL}, so a rollback to a savepoint before it undoes it too). The
   *       inserted row is joined with it, so it runs before the insert can wait.
   *   <li>{@code ins} inserts the fresh record unless the key exists.
   *   <li>{@code restored} sets the saved value back; it reads the insert's result, so it runs
   *       after the insert. Should the insert fail (its wait ran out), the statement fails and the
   *       rollback that follows undoes the setting as well.
   *   <li>The committed row, read only when the insert found the key (a one-time filter on its
   *       result: a new key costs no second probe), in the statement's snapshot: a row committed
   *       by a racer after it (the insert waited for that racer) is not seen, and then neither flag
   *       nor row comes back and a plain read follows.
   * </ol>
   *
   * <p>Parameters: the fresh record ({@link #bindInsert}), then its key. One row: whether it was
   * inserted, then {@link Rows#COLUMNS} (null unless the row was seen).
   */
  String transactionalClaimSql(String lockTimeout) {
    String t = table.qualified();
    return "WITH lt AS MATERIALIZED (SELECT s.saved, set_config('lock_timeout', '" + lockTimeout
        + "', true) AS ours FROM (SELECT current_setting('lock_timeout') AS saved OFFSET 0) AS s),"
        + " ins AS (INSERT INTO " + t + " (" + Rows.COLUMNS + ", purge_after) SELECT v.* FROM lt,"
        + " (VALUES (" + "?, ".repeat(Rows.COUNT) + "?)) AS v" + insertSuffix() + " RETURNING 1),"
        + " flag AS MATERIALIZED (SELECT EXISTS (SELECT 1 FROM ins) AS inserted),"
        + " restored AS MATERIALIZED (SELECT set_config('lock_timeout', lt.saved, true) AS back"
        + " FROM flag, lt)"
        + " SELECT f.inserted, " + Rows.columns("r") + " FROM flag f CROSS JOIN restored"
        + " LEFT JOIN (SELECT " + Rows.COLUMNS + " FROM " + t
        + " WHERE NOT EXISTS (SELECT 1 FROM ins) AND scope = ? AND tenant = ? AND idem_key = ?)"
        + " AS r ON true";
  }

  @Override
  boolean isTransient(SQLException e) {
    String state = e.getSQLState();
    // serialization_failure, deadlock_detected, lock_not_available
    return super.isTransient(e)
        || "40001".equals(state) || "40P01".equals(state) || "55P03".equals(state);
  }

  /** The longest {@code lock_timeout} PostgreSQL takes. */
  private static final java.time.Duration LONGEST_LOCK_TIMEOUT =
      java.time.Duration.ofMillis(Integer.MAX_VALUE);

  /**
   * A batch of claims, or of completions, is one statement and one commit, and gives up on a
   * held row after its lock wait (50 ms from Once), so coalescing pays here under many callers
   * and a held key holds up only its own caller (docs/benchmarks.md).
   */
  @Override
  public boolean coalescingPays() {
    return true;
  }

  @Override
  boolean canLimitLockWait() {
    return true;
  }

  @Override
  void limitLockWait(Connection c, java.time.Duration wait) throws SQLException {
    // Transaction-local: gone with the commit or the rollback.
    try (Statement s = c.createStatement()) {
      s.execute("SET LOCAL lock_timeout = " + lockTimeoutMillis(wait));
    }
  }

  @Override
  java.time.Duration lockWaitBound(java.time.Duration wait) {
    return java.time.Duration.ofMillis(lockTimeoutMillis(wait));
  }

  /**
   * {@code lock_timeout} in ms: 0 would mean forever, and it takes at most INT_MAX ms (a longer
   * wait is that one, not an error for every batch).
   */
  private static long lockTimeoutMillis(java.time.Duration wait) {
    return wait.compareTo(LONGEST_LOCK_TIMEOUT) >= 0 ? Integer.MAX_VALUE
        : Math.max(1, wait.toMillis());
  }

  @Override
  boolean isLockWaitTimeout(SQLException e) {
    return "55P03".equals(e.getSQLState()); // lock_not_available
  }

  @Override
  boolean mayHaveBeenApplied(SQLException e) {
    // 57P01-57P03: the backend was terminated or the server shut down, mid-statement or not.
    return super.mayHaveBeenApplied(e)
        || (e.getSQLState() != null && e.getSQLState().startsWith("57P"));
  }

  @Override
  boolean hasColumn(Connection c, String column) throws SQLException {
    // to_regclass resolves the name as the store's SQL does (search_path, case folding).
    try (PreparedStatement ps = c.prepareStatement("SELECT 1 FROM pg_attribute"
        + " WHERE attrelid = to_regclass(?)::oid AND attname = ? AND attnum > 0"
        + " AND NOT attisdropped")) {
      ps.setString(1, table.qualified());
      ps.setString(2, column);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next();
      }
    }
  }

  // --------------------------------------------------------------------------------------------
  // schema

  /** The column schema version 3 added. */
  static final String PURGE_AFTER = "purge_after";

  /**
   * The advisory lock key of making a table, before its name: version 4's script takes the same
   * ({@code hashtext('once.createSchema:${table}')}), so it and {@code createSchema()} take turns.
   */
  private static final String CREATE_SCHEMA_LOCK = "once.createSchema:";

  /** Rows of an upgraded table given their floor per transaction: short row locks, small WAL. */
  static final int BACKFILL_BATCH = 5_000;

  @Override
  List<String> upgradeColumns() {
    return List.of(CLAIM_ID, PURGE_AFTER);
  }

  /**
   * A table that does not exist yet is made by every version's script in one transaction, so it
   * is never seen before version 4 has given it its column order (version 1 alone, on an upgraded
   * table, would build again the expiry index that version 3 dropped). On an existing table, each
   * later version it lacks, then the floor of rows written before version 3; its column order
   * stays (version 4 remakes only an empty table, and a migration tool's run of it does that);
   * on an existing table version 5 runs every time, and locks it only while it has a check to
   * drop (a table just made has none). A table that is up to date costs a few catalog reads, an
   * advisory lock and one index probe.
   */
  @Override
  void createSchema(Connection c) throws SQLException {
    List<String> resources = schemaResources;
    boolean made = false;
    if (!exists(c, table.qualified())) {
      made = inTransaction(c, () -> {
        // Two instances starting at once: the second waits here, then finds the table made.
        try (PreparedStatement ps = c.prepareStatement(
            "SELECT pg_advisory_xact_lock(hashtext(?))")) {
          ps.setString(1, CREATE_SCHEMA_LOCK + table.qualified());
          ps.execute();
        }
        if (exists(c, table.qualified())) {
          return false;
        }
        for (String resource : resources) {
          execute(c, statements(resource));
        }
        return true;
      });
    }
    if (!hasColumn(c, CLAIM_ID)) {
      addColumn(c, statements(resources.get(1)));
    }
    if (!hasColumn(c, PURGE_AFTER) || !exists(c, table.qualified() + "_purge_idx")
        || exists(c, table.qualified() + "_expires_idx")) {
      execute(c, statements(resources.get(2))); // each statement IF [NOT] EXISTS
    }
    if (!made) {
      execute(c, statements(resources.get(4))); // drops only the checks the table still has
    }
    // Rows written before version 3 (or by an older store still running) have purge_after 0:
    // purged all the same, but every purge passes them over until they expire.
    while (execute(c, backfillSql, BACKFILL_BATCH) == BACKFILL_BATCH) {
      // another batch
    }
  }

  /** Whether the relation {@code name} exists, resolved as the store's SQL resolves it. */
  private static boolean exists(Connection c, String name) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("SELECT to_regclass(?) IS NOT NULL")) {
      ps.setString(1, name);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() && rs.getBoolean(1);
      }
    }
  }

  @Override
  int purge(Connection c, long nowMicros, int limit) throws SQLException {
    return execute(c, purgeSql, nowMicros, nowMicros, limit, nowMicros);
  }

  @Override
  int reap(Connection c, long nowMicros, int limit) throws SQLException {
    return execute(c, reapSql, nowMicros, nowMicros, limit, nowMicros);
  }

  /**
   * Lease mode, autocommit, in the order {@code order} has learned: insert-first sends a plain
   * {@code INSERT … ON CONFLICT DO NOTHING} (a new key: one round trip) and only on conflict reads
   * the committed row, by a statement of its own whose snapshot is taken after the insert saw the
   * row (so a row committed by a racer after the insert's snapshot is seen too; null only if it
   * was deleted in between). Read-first reads (a duplicate: one round trip) and inserts only when
   * no row was seen, which is then insert-first: never select-then-update.
   */
  @Override
  FirstStep insertOrRead(Connection c, IdempotencyRecord fresh, ClaimOrder order)
      throws SQLException {
    if (order.readFirst()) {
      IdempotencyRecord current = read(c, fresh.key());
      if (current != null) {
        order.record(true);
        return new FirstStep(false, current);
      }
    }
    if (insertIfAbsent(c, fresh)) {
      order.record(false);
      return FirstStep.INSERTED;
    }
    order.record(true);
    return new FirstStep(false, read(c, fresh.key()));
  }

  /** One {@code UPDATE … FROM unnest(…) RETURNING} in autocommit: one round trip, atomic. */
  @Override
  Set<IdempotencyKey> completeAll(Connection c, List<Completion> sorted, long nowMicros,
      long expiresAtMicros) throws SQLException {
    return completeAll(c, sorted, nowMicros, expiresAtMicros, 0);
  }

  @Override
  boolean limitsLockWaitInStatement() {
    return true;
  }

  /** As {@link #completeAll}, the one statement waiting at most {@code wait} for a held row. */
  @Override
  Set<IdempotencyKey> completeAllWithin(Connection c, List<Completion> sorted, long nowMicros,
      long expiresAtMicros, java.time.Duration wait) throws SQLException {
    return completeAll(c, sorted, nowMicros, expiresAtMicros, lockTimeoutMillis(wait));
  }

  /** {@code lockTimeoutMillis} 0: waits for held rows, else at most that long. */
  private Set<IdempotencyKey> completeAll(Connection c, List<Completion> sorted, long nowMicros,
      long expiresAtMicros, long lockTimeoutMillis) throws SQLException {
    int n = sorted.size();
    String[] kinds = new String[n];
    String[] mediaTypes = new String[n];
    byte[][] bodies = new byte[n][];
    for (int i = 0; i < n; i++) {
      Completion completion = sorted.get(i);
      kinds[i] = completion.outcome().kind().name();
      mediaTypes[i] = completion.outcome().mediaType();
      bodies[i] = completion.outcome().body();
    }
    KeyArrays owned = KeyArrays.of(sorted, Completion::key, Completion::token);
    Set<IdempotencyKey> lost = owned.keySet();
    boolean within = lockTimeoutMillis > 0;
    try (PreparedStatement ps =
        c.prepareStatement(within ? completeAllWithinSql : completeAllSql)) {
      planEachTime(ps);
      int i = 1;
      if (within) {
        ps.setString(i++, Long.toString(lockTimeoutMillis));
      }
      ps.setLong(i++, nowMicros);
      ps.setLong(i++, expiresAtMicros);
      ps.setLong(i++, expiresAtMicros);
      owned.bind(c, ps, i);
      ps.setArray(i + 4, c.createArrayOf("text", kinds));
      ps.setArray(i + 5, c.createArrayOf("text", mediaTypes));
      ps.setArray(i + 6, c.createArrayOf("bytea", bodies));
      try (ResultSet rs = within ? secondResults(ps) : ps.executeQuery()) {
        while (rs.next()) {
          lost.remove(new IdempotencyKey(rs.getString(1), rs.getString(2), rs.getString(3)));
        }
      }
    }
    if (!lost.isEmpty()) {
      // Only where the UPDATE matched nothing: was it this very completion, applied before?
      for (Completion completion : sorted) {
        if (lost.contains(completion.key()) && alreadyCompleted(c, completion)) {
          lost.remove(completion.key());
        }
      }
    }
    return lost;
  }

  /** Runs {@code ps}, two statements, and answers the second's rows. */
  private static ResultSet secondResults(PreparedStatement ps) throws SQLException {
    ps.execute();
    if (!ps.getMoreResults()) {
      throw new SQLException("the driver answered no rows for the second statement");
    }
    return ps.getResultSet();
  }

  /** One {@code UPDATE … FROM unnest(…) RETURNING} in autocommit: one round trip. */
  @Override
  Set<IdempotencyKey> extendAll(Connection c, List<HeldClaim> sorted, long nowMicros,
      long leaseUntilMicros) throws SQLException {
    KeyArrays owned = KeyArrays.of(sorted, HeldClaim::key, HeldClaim::token);
    Set<IdempotencyKey> lost = owned.keySet();
    try (PreparedStatement ps = c.prepareStatement(extendAllSql)) {
      planEachTime(ps);
      ps.setLong(1, leaseUntilMicros);
      ps.setLong(2, nowMicros);
      ps.setLong(3, leaseUntilMicros);
      owned.bind(c, ps, 4);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          lost.remove(new IdempotencyKey(rs.getString(1), rs.getString(2), rs.getString(3)));
        }
      }
    }
    return lost;
  }

  /**
   * The keys and tokens of a batch as the four arrays a {@code FROM unnest(…)} of an owned-write
   * batch binds: scope, tenant, key, token.
   */
  private record KeyArrays(String[] scopes, String[] tenants, String[] keys, Long[] tokens) {

    static <T> KeyArrays of(List<T> batch, Function<T, IdempotencyKey> key,
        ToLongFunction<T> token) {
      int n = batch.size();
      KeyArrays arrays = new KeyArrays(new String[n], new String[n], new String[n], new Long[n]);
      for (int i = 0; i < n; i++) {
        IdempotencyKey k = key.apply(batch.get(i));
        arrays.scopes[i] = k.scope();
        arrays.tenants[i] = k.tenant();
        arrays.keys[i] = k.key();
        arrays.tokens[i] = token.applyAsLong(batch.get(i));
      }
      return arrays;
    }

    /** Every key of the batch, in a set of its own. */
    Set<IdempotencyKey> keySet() {
      Set<IdempotencyKey> all = new HashSet<>();
      for (int i = 0; i < keys.length; i++) {
        all.add(new IdempotencyKey(scopes[i], tenants[i], keys[i]));
      }
      return all;
    }

    /** Binds the four arrays from parameter {@code i} on. */
    void bind(Connection c, PreparedStatement ps, int i) throws SQLException {
      ps.setArray(i, c.createArrayOf("text", scopes));
      ps.setArray(i + 1, c.createArrayOf("text", tenants));
      ps.setArray(i + 2, c.createArrayOf("text", keys));
      ps.setArray(i + 3, c.createArrayOf("int8", tokens));
    }
  }

  @Override
  boolean batchInsertsFirst() {
    return true;
  }

  @Override
  Set<IdempotencyKey> insertAll(Connection c, List<IdempotencyRecord> fresh) throws SQLException {
    int n = fresh.size();
    String[] scopes = new String[n];
    String[] tenants = new String[n];
    String[] keys = new String[n];
    byte[][] fingerprints = new byte[n][];
    Long[] tokens = new Long[n];
    Long[] leases = new Long[n];
    Long[] created = new Long[n];
    Long[] expires = new Long[n];
    Long[] claimIds = new Long[n];
    for (int i = 0; i < n; i++) {
      IdempotencyRecord r = fresh.get(i);
      claimIds[i] = r.claimId();
      scopes[i] = r.key().scope();
      tenants[i] = r.key().tenant();
      keys[i] = r.key().key();
      fingerprints[i] = r.fingerprint().digest();
      tokens[i] = r.token();
      leases[i] = EpochMicros.of(r.leaseUntil());
      created[i] = EpochMicros.of(r.createdAt());
      expires[i] = EpochMicros.of(r.expiresAt());
    }
    Set<IdempotencyKey> inserted = new HashSet<>();
    try (PreparedStatement ps = c.prepareStatement(insertAllSql)) {
      ps.setArray(1, c.createArrayOf("text", scopes));
      ps.setArray(2, c.createArrayOf("text", tenants));
      ps.setArray(3, c.createArrayOf("text", keys));
      ps.setArray(4, c.createArrayOf("bytea", fingerprints));
      ps.setArray(5, c.createArrayOf("int8", tokens));
      ps.setArray(6, c.createArrayOf("int8", leases));
      ps.setArray(7, c.createArrayOf("int8", created));
      ps.setArray(8, c.createArrayOf("int8", expires));
      ps.setArray(9, c.createArrayOf("int8", claimIds));
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          inserted.add(new IdempotencyKey(rs.getString(1), rs.getString(2), rs.getString(3)));
        }
      }
    }
    return inserted;
  }

  @Override
  Map<IdempotencyKey, IdempotencyRecord> lockAll(Connection c, List<IdempotencyKey> keys)
      throws SQLException {
    return selectAll(c, lockAllSql, keys);
  }

  @Override
  Map<IdempotencyKey, IdempotencyRecord> readAll(Connection c, List<IdempotencyKey> keys)
      throws SQLException {
    return selectAll(c, readAllSql, keys);
  }

  /**
   * Has {@code ps} planned with its values on every execution rather than once for all. A batch
   * statement joins its arrays to the table; PostgreSQL caches a generic plan for a statement
   * pgjdbc prepared on the server (from its sixth execution there), and one made while the table
   * held a few rows scans the whole table for every batch, however much it has grown, until an
   * analyze (an autoanalyze can be a minute or more away) invalidates it: a new table under
   * coalesced calls or a consumer's batches did (PostgresYoungTableBatchPlanTest). Planning each
   * batch costs tens of microseconds, shared by its keys. Single-key statements keep their
   * cached plans: a lookup by the whole primary key is an index scan in any plan.
   */
  private static void planEachTime(PreparedStatement ps) throws SQLException {
    if (Pgjdbc.PRESENT) {
      Pgjdbc.neverPrepareOnServer(ps);
    }
  }

  /** pgjdbc, touched only where it is on the class path (another driver may serve PostgreSQL). */
  private static final class Pgjdbc {
    static final boolean PRESENT = present();

    private static boolean present() {
      try {
        Class.forName("org.postgresql.PGStatement", false, PostgresDialect.class.getClassLoader());
        return true;
      } catch (ClassNotFoundException | LinkageError e) {
        return false;
      }
    }

    static void neverPrepareOnServer(PreparedStatement ps) throws SQLException {
      if (ps.isWrapperFor(org.postgresql.PGStatement.class)) {
        ps.unwrap(org.postgresql.PGStatement.class).setPrepareThreshold(0);
      }
    }
  }

  private static Map<IdempotencyKey, IdempotencyRecord> selectAll(Connection c, String sql,
      List<IdempotencyKey> keys) throws SQLException {
    int n = keys.size();
    String[] scopes = new String[n];
    String[] tenants = new String[n];
    String[] ids = new String[n];
    for (int i = 0; i < n; i++) {
      scopes[i] = keys.get(i).scope();
      tenants[i] = keys.get(i).tenant();
      ids[i] = keys.get(i).key();
    }
    Map<IdempotencyKey, IdempotencyRecord> records = new HashMap<>();
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      planEachTime(ps);
      Array a1 = c.createArrayOf("text", scopes);
      Array a2 = c.createArrayOf("text", tenants);
      Array a3 = c.createArrayOf("text", ids);
      ps.setArray(1, a1);
      ps.setArray(2, a2);
      ps.setArray(3, a3);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          IdempotencyRecord r = Rows.read(rs);
          records.put(r.key(), r);
        }
      }
    }
    return records;
  }
}
