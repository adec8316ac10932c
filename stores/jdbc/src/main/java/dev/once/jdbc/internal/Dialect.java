package dev.once.jdbc.internal;

import dev.once.IdempotencyKey;
import dev.once.spi.Completion;
import dev.once.spi.EpochMicros;
import dev.once.spi.HeldClaim;
import dev.once.spi.IdempotencyRecord;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * What differs between databases: SQL text, how a transaction starts, which errors are worth a
 * retry, how a batch claim inserts. {@link JdbcEngine} holds the algorithm, which is the same for
 * all of them.
 */
public abstract class Dialect {

  /** The condition of every fenced write: the record is IN_PROGRESS under the caller's token. */
  static final String OWNED =
      " WHERE scope = ? AND tenant = ? AND idem_key = ? AND token = ? AND status = 'IN_PROGRESS'";

  /** Which database: the name of its {@code JdbcDialect} constant ({@code "POSTGRESQL"}, …). */
  final String kind;
  /** Its {@code JdbcDialect.schemaResources()}, oldest first. */
  final List<String> schemaResources;
  final TableName table;
  /**
   * Whether the table keeps {@code purge_after}, a lower bound of {@code expires_at} that purging
   * finds rows by (PostgreSQL, schema version 3): every write that sets {@code expires_at} lowers
   * it when needed ({@code LEAST}), so the usual completion leaves every indexed column alone.
   */
  final boolean expiryFloor;
  final String findSql;
  final String lockSql;
  final String insertSql;
  /**
   * {@link #insertSql} for a record with no checkpoint, outcome or error, as every claim writes:
   * those six columns are left to their default (null) instead of bound as nulls, which the
   * driver and the server each pay for per column.
   */
  final String insertBareSql;
  final String completeSql;
  final String failSql;
  /** As failSql, one attempt fewer: an IN_PROGRESS record always has at least one. */
  final String releaseSql;
  final String extendSql;
  final String checkpointSql;
  final String ownedSql;
  /** Whether a completion was applied: COMPLETED under the token at the batch's instant. */
  final String completedAtSql;
  private final String[] replaceSql = new String[4];

  Dialect(String kind, List<String> schemaResources, TableName table, boolean expiryFloor) {
    this.kind = kind;
    this.schemaResources = List.copyOf(schemaResources);
    this.table = table;
    this.expiryFloor = expiryFloor;
    String t = table.qualified();
    String byKey = " WHERE scope = ? AND tenant = ? AND idem_key = ?";
    findSql = "SELECT " + Rows.COLUMNS + " FROM " + t + byKey;
    lockSql = findSql + lockSuffix();
    insertSql = "INSERT INTO " + t + " (" + Rows.COLUMNS + (expiryFloor ? ", purge_after" : "")
        + ") VALUES (" + "?, ".repeat(Rows.COUNT - (expiryFloor ? 0 : 1)) + "?)" + insertSuffix();
    insertBareSql = "INSERT INTO " + t + " (" + Rows.BARE_COLUMNS
        + (expiryFloor ? ", purge_after" : "") + ") VALUES ("
        + "?, ".repeat(Rows.BARE_COUNT - (expiryFloor ? 0 : 1)) + "?)" + insertSuffix();
    String failExpiry = greatest() + "(?, lease_until)";
    completeSql = "UPDATE " + t + " SET status = 'COMPLETED', outcome_kind = ?,"
        + " outcome_media_type = ?, outcome_body = ?, updated_at = ?, expires_at = ?"
        + lowerFloor("?") + OWNED;
    failSql = "UPDATE " + t + " SET status = 'FAILED', last_error = ?, updated_at = ?,"
        + " expires_at = " + failExpiry + lowerFloor(failExpiry) + OWNED;
    releaseSql = "UPDATE " + t + " SET status = 'FAILED', last_error = ?, updated_at = ?,"
        + " expires_at = " + failExpiry + lowerFloor(failExpiry) + ", attempts = attempts - 1"
        + OWNED;
    extendSql = "UPDATE " + t + " SET lease_until = ?, updated_at = ?,"
        + " expires_at = " + greatest() + "(expires_at, ?)" + OWNED;
    checkpointSql = "UPDATE " + t + " SET checkpoint_name = ?, checkpoint_data = ?, updated_at = ?"
        + OWNED;
    ownedSql = "SELECT 1 FROM " + t + OWNED;
    completedAtSql = "SELECT 1 FROM " + t + byKey
        + " AND token = ? AND status = 'COMPLETED' AND updated_at = ?";
    for (int variant = 0; variant < 4; variant++) {
      StringBuilder sql = new StringBuilder("UPDATE ").append(t).append(" SET status = ?,"
          + " fingerprint = ?, token = ?, lease_until = ?, attempts = ?, last_error = ?,"
          + " created_at = ?, updated_at = ?, expires_at = ?, claim_id = ?"
          + (expiryFloor ? ", purge_after = ?" : ""));
      if ((variant & 1) != 0) {
        sql.append(", checkpoint_name = ?, checkpoint_data = ?");
      }
      if ((variant & 2) != 0) {
        sql.append(", outcome_kind = ?, outcome_media_type = ?, outcome_body = ?");
      }
      replaceSql[variant] = sql.append(byKey).append(" AND token = ?").toString();
    }
  }

  /**
   * The SET item that keeps {@code purge_after <= expires_at} when {@code expires_at} becomes
   * {@code expiry} (a SQL expression of parameters and old column values), or nothing where the
   * table has no floor. It leaves the value as it is unless the new expiry is lower, and an UPDATE
   * that leaves an indexed column's value as it was can still be a HOT update.
   */
  private String lowerFloor(String expiry) {
    return expiryFloor ? ", purge_after = LEAST(purge_after, " + expiry + ")" : "";
  }

  /**
   * Binds a write's new expiry at {@code i}: once, or twice where {@link #expiryFloor} puts it in
   * {@link #lowerFloor} too. Returns the next index.
   */
  final int bindExpiry(PreparedStatement ps, int i, long expiresAtMicros) throws SQLException {
    ps.setLong(i++, expiresAtMicros);
    if (expiryFloor) {
      ps.setLong(i++, expiresAtMicros);
    }
    return i;
  }

  /** Binds {@link #insertSql}'s columns for {@code fresh} from {@code i}; returns the next. */
  final int bindInsert(PreparedStatement ps, int i, IdempotencyRecord fresh) throws SQLException {
    return bindInsert(ps, i, fresh, false);
  }

  /** Binds {@link #insertBareSql}'s columns if {@code bare}, else {@link #insertSql}'s. */
  private int bindInsert(PreparedStatement ps, int i, IdempotencyRecord fresh, boolean bare)
      throws SQLException {
    i = Rows.bindAll(ps, i, fresh, bare);
    if (expiryFloor) {
      ps.setLong(i++, EpochMicros.of(fresh.expiresAt())); // a new record's floor: its expiry
    }
    return i;
  }

  /** Which database this is: the name of its {@code JdbcDialect} constant. */
  public String kind() {
    return kind;
  }

  /**
   * The dialect support for {@code dialect} (the name of a {@code JdbcDialect} constant, whose
   * {@code schemaResources()} are given) over {@code table}. By name, so this package does not
   * depend back on the public {@code JdbcDialect}, which depends on it.
   */
  public static Dialect of(String dialect, List<String> schemaResources, TableName table) {
    switch (dialect) {
      case "POSTGRESQL":
        return new PostgresDialect(schemaResources, table);
      case "MARIADB":
        return new MariaDbDialect(schemaResources, table);
      case "SQLITE":
        if (table.isQualified()) {
          throw new IllegalArgumentException("invalid table name '" + table
              + "': SQLite tables are not schema-qualified here; attach the file as the main"
              + " database instead");
        }
        return new SqliteDialect(schemaResources, table);
      default:
        throw new IllegalArgumentException("unknown dialect " + dialect);
    }
  }

  /** The UPDATE that replaces a locked record; only changed payload columns are sent. */
  final String replaceSql(boolean checkpointChanged, boolean outcomeChanged) {
    return replaceSql[(checkpointChanged ? 1 : 0) | (outcomeChanged ? 2 : 0)];
  }

  /** Writes the successor of a record the transaction holds locked. */
  void replace(Connection c, IdempotencyRecord old, IdempotencyRecord next)
      throws SQLException {
    boolean checkpointChanged = !Objects.equals(old.checkpoint(), next.checkpoint());
    boolean outcomeChanged = !Objects.equals(old.outcome(), next.outcome());
    try (PreparedStatement ps =
        c.prepareStatement(replaceSql(checkpointChanged, outcomeChanged))) {
      int i = 1;
      ps.setString(i++, next.status().name());
      ps.setBytes(i++, next.fingerprint().digest());
      ps.setLong(i++, next.token());
      ps.setLong(i++, EpochMicros.of(next.leaseUntil()));
      ps.setInt(i++, next.attempts());
      Rows.string(ps, i++, next.lastError());
      ps.setLong(i++, EpochMicros.of(next.createdAt()));
      ps.setLong(i++, EpochMicros.of(next.updatedAt()));
      ps.setLong(i++, EpochMicros.of(next.expiresAt()));
      ps.setLong(i++, next.claimId());
      if (expiryFloor) {
        // The successor's own expiry: never later than any expiry it will be written with, as
        // it only grows (extend) or is lowered with the floor (complete, fail).
        ps.setLong(i++, EpochMicros.of(next.expiresAt()));
      }
      if (checkpointChanged) {
        i = Rows.bindCheckpoint(ps, i, next);
      }
      if (outcomeChanged) {
        i = Rows.bindOutcome(ps, i, next);
      }
      i = Rows.bindKey(ps, i, old.key());
      ps.setLong(i, old.token());
      int rows = ps.executeUpdate();
      if (rows != 1) {
        // Cannot happen while the row is locked; refuse to report a claim that was not stored.
        throw new SQLException("the locked record of " + old.key() + " changed underneath ("
            + rows + " rows updated)");
      }
    }
  }

  /**
   * Stores a batch of completions ({@code sorted} in key order, so that concurrent batches lock
   * rows in the same order), each conditional like {@link #completeSql}.
   *
   * <p>This default runs {@link #completeSql} as one JDBC batch (the driver pipelines it) in one
   * transaction; an update count of 0 means the lease was lost. A driver that answers
   * {@link Statement#SUCCESS_NO_INFO} (MariaDB bulk statements) is asked row by row, in the same
   * transaction, whether its completion was applied.
   *
   * @return the keys whose completion found the record not IN_PROGRESS under its token
   */
  Set<IdempotencyKey> completeAll(Connection c, List<Completion> sorted, long nowMicros,
      long expiresAtMicros) throws SQLException {
    return inTransaction(c, () -> {
      int[] counts;
      try (PreparedStatement ps = c.prepareStatement(completeSql)) {
        for (Completion completion : sorted) {
          int i = Rows.bindOutcome(ps, 1, completion.outcome());
          ps.setLong(i++, nowMicros);
          i = bindExpiry(ps, i, expiresAtMicros);
          i = Rows.bindKey(ps, i, completion.key());
          ps.setLong(i, completion.token());
          ps.addBatch();
        }
        counts = ps.executeBatch();
      }
      if (counts.length != sorted.size()) {
        throw new SQLException("the driver answered " + counts.length + " update counts to a"
            + " batch of " + sorted.size() + " completions");
      }
      Set<IdempotencyKey> lost = new HashSet<>();
      for (int j = 0; j < counts.length; j++) {
        Completion completion = sorted.get(j);
        // A completion always changes the status, so 0 means "not matched" even where counts
        // are rows changed rather than rows matched.
        boolean applied = counts[j] == Statement.SUCCESS_NO_INFO
            ? completedAt(c, completion, nowMicros) : counts[j] > 0;
        if (!applied && !alreadyCompleted(c, completion)) {
          lost.add(completion.key());
        }
      }
      return lost;
    });
  }

  /**
   * Extends a batch of leases (sorted by key, so concurrent batches lock rows in the same order):
   * {@link #extendSql} as one JDBC batch in one transaction. A count of 0 (or no count) is asked
   * again whether the row is IN_PROGRESS under the token: where counts are rows changed, an
   * extension to the very same instant changes nothing and still holds.
   *
   * @return the keys no longer IN_PROGRESS under their claim's token
   */
  Set<IdempotencyKey> extendAll(Connection c, List<HeldClaim> sorted, long nowMicros,
      long leaseUntilMicros) throws SQLException {
    return inTransaction(c, () -> {
      int[] counts;
      try (PreparedStatement ps = c.prepareStatement(extendSql)) {
        for (HeldClaim claim : sorted) {
          ps.setLong(1, leaseUntilMicros);
          ps.setLong(2, nowMicros);
          ps.setLong(3, leaseUntilMicros);
          ps.setLong(Rows.bindKey(ps, 4, claim.key()), claim.token());
          ps.addBatch();
        }
        counts = ps.executeBatch();
      }
      Set<IdempotencyKey> lost = new HashSet<>();
      for (int j = 0; j < sorted.size(); j++) {
        HeldClaim claim = sorted.get(j);
        if ((j >= counts.length || counts[j] <= 0) && !owned(c, claim.key(), claim.token())) {
          lost.add(claim.key());
        }
      }
      return lost;
    });
  }

  /** Whether the record is IN_PROGRESS under {@code token}. */
  boolean owned(Connection c, IdempotencyKey key, long token) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(ownedSql)) {
      ps.setLong(Rows.bindKey(ps, 1, key), token);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next();
      }
    }
  }

  /**
   * Whether a completion that matched no row was applied before: the record is COMPLETED under
   * its token with an equal outcome (the same completion re-sent). Asked only on that path.
   */
  boolean alreadyCompleted(Connection c, Completion completion) throws SQLException {
    IdempotencyRecord current = read(c, completion.key());
    return current != null && current.isCompletedAs(completion.token(), completion.outcome());
  }

  private boolean completedAt(Connection c, Completion completion, long nowMicros)
      throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(completedAtSql)) {
      int i = Rows.bindKey(ps, 1, completion.key());
      ps.setLong(i++, completion.token());
      ps.setLong(i, nowMicros);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next();
      }
    }
  }

  /** Appended to the by-key SELECT to lock the row for the rest of the transaction. */
  String lockSuffix() {
    return " FOR UPDATE";
  }

  /** Appended to the INSERT so that an existing key is not an error. */
  String insertSuffix() {
    return " ON CONFLICT (scope, tenant, idem_key) DO NOTHING";
  }

  /** The two-argument maximum function. */
  String greatest() {
    return "GREATEST";
  }

  /**
   * Inserts {@code fresh} unless its key exists, in one statement.
   *
   * @return whether the row was inserted
   */
  boolean insertIfAbsent(Connection c, IdempotencyRecord fresh) throws SQLException {
    boolean bare = Rows.bare(fresh);
    try (PreparedStatement ps = c.prepareStatement(bare ? insertBareSql : insertSql)) {
      bindInsert(ps, 1, fresh, bare);
      return ps.executeUpdate() == 1;
    }
  }

  /**
   * The first step of a claim, in autocommit: insert {@code fresh} unless its key exists, and if it
   * does, read the committed record (without locking it). {@code order} says which to try first
   * where the dialect lets the stream of claims choose (PostgreSQL); this default inserts first.
   *
   * @return {@link FirstStep#INSERTED}, or the record seen (its {@code current} is null if it was
   *         deleted in between)
   */
  FirstStep insertOrRead(Connection c, IdempotencyRecord fresh, ClaimOrder order)
      throws SQLException {
    if (insertIfAbsent(c, fresh)) {
      return FirstStep.INSERTED;
    }
    return new FirstStep(false, read(c, fresh.key()));
  }

  /** What {@link #insertOrRead} did. */
  record FirstStep(boolean inserted, IdempotencyRecord current) {
    static final FirstStep INSERTED = new FirstStep(true, null);
  }

  /** Reads the committed record of {@code key}, or null; locks nothing. */
  IdempotencyRecord read(Connection c, IdempotencyKey key) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(findSql)) {
      Rows.bindKey(ps, 1, key);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? Rows.read(rs) : null;
      }
    }
  }

  /** Reads the record of {@code key} and locks it until the transaction ends, or null. */
  IdempotencyRecord lockedRead(Connection c, IdempotencyKey key) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(lockSql)) {
      Rows.bindKey(ps, 1, key);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? Rows.read(rs) : null;
      }
    }
  }

  /**
   * Runs {@code body} in one transaction on {@code c} (which is in autocommit mode), commits, and
   * rolls back if anything fails. A failed commit throws: nothing is reported done that was not.
   * On a connection already in a transaction of this store's (a batch bounded by a lock wait,
   * which the dialect's batch runs inside), {@code body} joins it: its owner commits or rolls
   * back.
   */
  <T> T inTransaction(Connection c, SqlWork<T> body) throws SQLException {
    if (!c.getAutoCommit()) {
      return body.run();
    }
    c.setAutoCommit(false);
    T result;
    try {
      result = body.run();
      c.commit();
    } catch (Throwable t) {
      rollbackQuietly(c, t);
      try {
        c.setAutoCommit(true);
      } catch (SQLException | RuntimeException e) {
        t.addSuppressed(e); // a dead connection: keep the first failure as the one reported
      }
      throw t;
    }
    c.setAutoCommit(true);
    return result;
  }

  static void rollbackQuietly(Connection c, Throwable cause) {
    try {
      c.rollback();
    } catch (SQLException | RuntimeException e) {
      cause.addSuppressed(e);
    }
  }

  /**
   * Whether Once should coalesce store calls here when the user leaves it to the store
   * ({@code IdempotencyStore.defaultCoalescing}): only where batches pay and a batch gives up on
   * a held row within a bound shorter than a second.
   */
  public boolean coalescingPays() {
    return false;
  }

  /** Whether {@link #limitLockWait} bounds a transaction's wait for rows (else it waits). */
  boolean canLimitLockWait() {
    return false;
  }

  /**
   * Bounds how long the transaction open on {@code c} waits for any one lock, until
   * {@link #endLockWait} or the transaction's end; then the statement fails with an error
   * {@link #isLockWaitTimeout} recognises. Only where {@link #canLimitLockWait}. The bound set is
   * {@link #lockWaitBound}'s.
   */
  void limitLockWait(Connection c, java.time.Duration wait) throws SQLException {
    throw new UnsupportedOperationException("this database's lock wait is not bounded here");
  }

  /**
   * Puts back on {@code c} what {@link #limitLockWait} changed beyond the transaction: called as
   * the transaction's last statement, and again after a rollback. Nothing where the bound ends
   * with the transaction.
   */
  void endLockWait(Connection c) throws SQLException {}

  /**
   * Whether {@link #completeAllWithin} bounds its wait for rows in its one statement, with no
   * transaction around it (else the engine runs {@link #completeAll} in one with
   * {@link #limitLockWait}). Only where {@link #canLimitLockWait}.
   */
  boolean limitsLockWaitInStatement() {
    return false;
  }

  /**
   * What a wait of {@code wait} comes to in this database's granularity: at least {@code wait},
   * up to the longest the database takes.
   */
  java.time.Duration lockWaitBound(java.time.Duration wait) {
    return wait;
  }

  /**
   * {@link #completeAll}, waiting at most {@code wait} for a row another transaction holds; then
   * it fails with an error {@link #isLockWaitTimeout} recognises, having stored nothing. Only
   * where {@link #limitsLockWaitInStatement}.
   */
  Set<IdempotencyKey> completeAllWithin(Connection c, List<Completion> sorted, long nowMicros,
      long expiresAtMicros, java.time.Duration wait) throws SQLException {
    throw new UnsupportedOperationException("no lock wait in one statement here");
  }

  /** Whether {@code e} is a lock wait that {@link #limitLockWait}'s bound ended. */
  boolean isLockWaitTimeout(SQLException e) {
    return false;
  }

  /** Whether the failure rolled the transaction back and the operation may simply run again. */
  boolean isTransient(SQLException e) {
    return e instanceof RetryableConflict;
  }

  /** Deletes up to {@code limit} expired records; returns how many. */
  abstract int purge(Connection c, long nowMicros, int limit) throws SQLException;

  /** Turns up to {@code limit} expired leases into FAILED; returns how many. */
  abstract int reap(Connection c, long nowMicros, int limit) throws SQLException;

  /**
   * Whether an UPDATE's count is the rows changed rather than the rows matched, so that 0 may mean
   * "matched but already equal" (MariaDB with useAffectedRows=true).
   */
  boolean countsChangedRows() {
    return false;
  }

  /** Whether batch claims insert absent keys first, in one statement ({@link #insertAll}). */
  boolean batchInsertsFirst() {
    return false;
  }

  /** Inserts fresh records, ignoring existing keys; returns the keys inserted. */
  Set<IdempotencyKey> insertAll(Connection c, List<IdempotencyRecord> fresh) throws SQLException {
    throw new UnsupportedOperationException();
  }

  /** Locks and reads the records of {@code keys} in key order. */
  Map<IdempotencyKey, IdempotencyRecord> lockAll(Connection c, List<IdempotencyKey> keys)
      throws SQLException {
    throw new UnsupportedOperationException();
  }

  /** Reads the committed records of {@code keys} in one statement; locks nothing. */
  Map<IdempotencyKey, IdempotencyRecord> readAll(Connection c, List<IdempotencyKey> keys)
      throws SQLException {
    throw new UnsupportedOperationException();
  }

  /**
   * Applies the schema: the first version's script (each statement {@code IF NOT EXISTS}), then
   * each later version's column where the table lacks it (a table made by an earlier version is
   * upgraded in place). Idempotent.
   */
  void createSchema(Connection c) throws SQLException {
    List<String> resources = schemaResources;
    execute(c, statements(resources.get(0)));
    if (!hasColumn(c, CLAIM_ID)) {
      addColumn(c, statements(resources.get(1)));
    }
  }

  /** The statements of the schema resource {@code resource} for this table. */
  final List<String> statements(String resource) {
    return SchemaScript.statements(SchemaScript.text(resource, table));
  }

  static void execute(Connection c, List<String> statements) throws SQLException {
    try (Statement s = c.createStatement()) {
      for (String sql : statements) {
        s.execute(sql);
      }
    }
  }

  /** Whether the table has {@code column}. */
  abstract boolean hasColumn(Connection c, String column) throws SQLException;

  /**
   * Runs an upgrade script that adds a column the table lacks ({@code ADD COLUMN IF NOT EXISTS},
   * so that two instances upgrading at once do not fail).
   */
  void addColumn(Connection c, List<String> statements) throws SQLException {
    execute(c, statements);
  }

  // --------------------------------------------------------------------------------------------
  // errors

  /** The column that version 2 of the schema added. */
  static final String CLAIM_ID = "claim_id";

  /**
   * The message for a failure that says the table lacks a column of a later schema version: it
   * was made by an earlier version of the store and {@code createSchema()} has not run since.
   * Null for any other failure.
   */
  String missingSchemaHint(SQLException e) {
    String column = missingColumnHint(e);
    return column != null ? column : missingTableHint(e);
  }

  /** What to do when the table does not exist at all, or null when {@code e} is not that. */
  String missingTableHint(SQLException e) {
    String state = String.valueOf(e.getSQLState());
    String message = String.valueOf(e.getMessage()).toLowerCase(java.util.Locale.ROOT);
    boolean missingTable = state.equals("42P01") // PostgreSQL: undefined_table
        || state.equals("42S02") // MariaDB/MySQL: 1146, table doesn't exist
        || message.contains("no such table"); // SQLite
    if (!missingTable) {
      return null;
    }
    return "the table " + table + " does not exist: create it once with JdbcStore.createSchema()"
        + " (or `once schema --apply --table " + table + "`), or apply "
        + String.join(" and ", schemaResources) + " with your migrations";
  }

  String missingColumnHint(SQLException e) {
    String message = String.valueOf(e.getMessage()).toLowerCase(java.util.Locale.ROOT);
    boolean missingColumn = message.contains("does not exist") // PostgreSQL, 42703
        || message.contains("unknown column") // MariaDB/MySQL, 1054
        || message.contains("no such column") || message.contains("has no column named"); // SQLite
    if (!missingColumn) {
      return null;
    }
    List<String> columns = upgradeColumns();
    for (int v = 0; v < columns.size(); v++) {
      if (!message.contains(columns.get(v))) {
        continue;
      }
      // The column came with version v + 2: that version and every later one that adds a column
      // are missing (PostgreSQL's version 4 adds none; it only reorders a table just made).
      List<String> upgrades = schemaResources.subList(v + 1, columns.size() + 1);
      StringBuilder apply = new StringBuilder();
      for (String resource : upgrades) {
        apply.append(apply.length() == 0 ? "" : ", then ").append(resource).append(" (")
            .append(String.join("; ", statements(resource))).append(')');
      }
      return "the table " + table + " has no column " + columns.get(v) + ": it was created by an"
          + " earlier version of once-jdbc. Upgrade it once: call JdbcStore.createSchema()"
          + " (idempotent), or apply " + apply + " with your migrations";
    }
    return null;
  }

  /** The columns later schema versions added, by version: the first came with version 2. */
  List<String> upgradeColumns() {
    return List.of(CLAIM_ID);
  }

  /**
   * Whether an operation that failed with {@code e} may have been applied all the same. Every
   * write of the store is one statement in autocommit or one transaction rolled back on failure,
   * so an error the database answered (a refused statement, a deadlock, a failed commit) means
   * nothing was written; only a connection lost while a write or commit was under way leaves it
   * unknown.
   */
  boolean mayHaveBeenApplied(SQLException e) {
    if (isTransient(e)) {
      return false; // rolled back, and the retries gave up
    }
    // By SQLState, not exception class: MariaDB's driver files unknown states (a trigger's
    // SIGNAL '45000') under SQLTransientConnectionException.
    String state = e.getSQLState();
    return (state != null && state.startsWith("08"))
        || e instanceof java.sql.SQLRecoverableException
        || e instanceof java.sql.SQLTimeoutException;
  }

  static int execute(Connection c, String sql, Number... params) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      for (int i = 0; i < params.length; i++) {
        if (params[i] instanceof Integer n) {
          ps.setInt(i + 1, n);
        } else {
          ps.setLong(i + 1, params[i].longValue());
        }
      }
      return ps.executeUpdate();
    }
  }
}
