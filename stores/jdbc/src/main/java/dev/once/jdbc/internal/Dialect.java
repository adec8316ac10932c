package dev.once.jdbc.internal;

import dev.once.IdempotencyKey;
import dev.once.jdbc.JdbcDialect;
import dev.once.spi.Completion;
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

  final JdbcDialect kind;
  final TableName table;
  final String findSql;
  final String lockSql;
  final String insertSql;
  final String completeSql;
  final String failSql;
  final String extendSql;
  final String checkpointSql;
  final String ownedSql;
  /** Whether a completion was applied: COMPLETED under the token at the batch's instant. */
  final String completedAtSql;
  private final String[] replaceSql = new String[4];

  Dialect(JdbcDialect kind, TableName table) {
    this.kind = kind;
    this.table = table;
    String t = table.qualified();
    String byKey = " WHERE scope = ? AND tenant = ? AND idem_key = ?";
    findSql = "SELECT " + Rows.COLUMNS + " FROM " + t + byKey;
    lockSql = findSql + lockSuffix();
    insertSql = "INSERT INTO " + t + " (" + Rows.COLUMNS + ") VALUES ("
        + "?, ".repeat(16) + "?)" + insertSuffix();
    completeSql = "UPDATE " + t + " SET status = 'COMPLETED', outcome_kind = ?,"
        + " outcome_media_type = ?, outcome_body = ?, updated_at = ?, expires_at = ?" + OWNED;
    failSql = "UPDATE " + t + " SET status = 'FAILED', last_error = ?, updated_at = ?,"
        + " expires_at = " + greatest() + "(?, lease_until)" + OWNED;
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
          + " created_at = ?, updated_at = ?, expires_at = ?");
      if ((variant & 1) != 0) {
        sql.append(", checkpoint_name = ?, checkpoint_data = ?");
      }
      if ((variant & 2) != 0) {
        sql.append(", outcome_kind = ?, outcome_media_type = ?, outcome_body = ?");
      }
      replaceSql[variant] = sql.append(byKey).append(" AND token = ?").toString();
    }
  }

  /** The dialect support for {@code dialect} over {@code table}. */
  public static Dialect of(JdbcDialect dialect, TableName table) {
    switch (dialect) {
      case POSTGRESQL:
        return new PostgresDialect(table);
      case MARIADB:
        return new MariaDbDialect(table);
      case SQLITE:
        if (table.isQualified()) {
          throw new IllegalArgumentException("invalid table name '" + table
              + "': SQLite tables are not schema-qualified here; attach the file as the main"
              + " database instead");
        }
        return new SqliteDialect(table);
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
      ps.setLong(i++, Micros.of(next.leaseUntil()));
      ps.setInt(i++, next.attempts());
      Rows.string(ps, i++, next.lastError());
      ps.setLong(i++, Micros.of(next.createdAt()));
      ps.setLong(i++, Micros.of(next.updatedAt()));
      ps.setLong(i++, Micros.of(next.expiresAt()));
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
          ps.setLong(i++, expiresAtMicros);
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
        if (!applied) {
          lost.add(completion.key());
        }
      }
      return lost;
    });
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
    try (PreparedStatement ps = c.prepareStatement(insertSql)) {
      Rows.bindAll(ps, 1, fresh);
      return ps.executeUpdate() == 1;
    }
  }

  /**
   * The first step of a claim, in autocommit: insert {@code fresh} unless its key exists, and if it
   * does, read the committed record (without locking it).
   *
   * @return {@link FirstStep#INSERTED}, or the record seen (its {@code current} is null if it was
   *         deleted in between)
   */
  FirstStep insertOrRead(Connection c, IdempotencyRecord fresh) throws SQLException {
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
   */
  <T> T inTransaction(Connection c, SqlWork<T> body) throws SQLException {
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

  /** Applies the schema script, statement by statement; every statement is idempotent. */
  void createSchema(Connection c) throws SQLException {
    List<String> statements = SchemaScript.statements(SchemaScript.text(kind.schemaResource(), table));
    try (Statement s = c.createStatement()) {
      for (String sql : statements) {
        s.execute(sql);
      }
    }
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
