package dev.once.jdbc.internal;

import dev.once.IdempotencyKey;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.Outcome;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The SQL of transactional mode ({@link TransactionalEngine}), per dialect: how the claim waits for
 * a concurrent claim of the same key (at most the lock wait, and only the claim's own statements:
 * the business SQL keeps the session's lock timeout), savepoints, and how the completion is written.
 *
 * <ul>
 *   <li>PostgreSQL: the claim is one statement ({@link PostgresDialect#transactionalClaimSql}):
 *       it saves the session's lock timeout and sets ours, transaction-locally (as
 *       {@code SET LOCAL}), inserts unless the key exists, restores the timeout, and reads the
 *       existing row if there is one; savepoints ride along in the same round trip (pgjdbc sends
 *       the statements with one Sync). A takeover's locked read is three statements in one round
 *       trip (timeout saved and set, {@code SELECT … FOR UPDATE}, restored). The completion
 *       {@code UPDATE} carries the {@code COMMIT} (or the {@code RELEASE SAVEPOINT}) in the same
 *       round trip.
 *   <li>MariaDB: {@code SET STATEMENT innodb_lock_wait_timeout = n FOR INSERT …} scopes the wait to
 *       the one statement (whole seconds, rounded up; 0 answers at once). MySQL has no
 *       {@code SET STATEMENT}: the session variable is set and restored around the claim
 *       (at least 1 s there; the locked read uses {@code NOWAIT} for a zero wait).
 *   <li>SQLite: {@code BEGIN IMMEDIATE} takes the database's single write lock first; a duplicate
 *       waits for it up to the connection's busy timeout (the lock wait does not apply).
 * </ul>
 */
abstract class TxSql {

  final Dialect dialect;
  final Duration lockWait;

  TxSql(Dialect dialect, Duration lockWait) {
    this.dialect = dialect;
    this.lockWait = lockWait;
  }

  static TxSql of(Dialect dialect, Duration lockWait) {
    switch (dialect.kind) {
      case "POSTGRESQL":
        return new Postgres(dialect, lockWait);
      case "MARIADB":
        return new MariaDb(dialect, lockWait);
      case "SQLITE":
        return new Sqlite(dialect, lockWait);
      default:
        throw new IllegalArgumentException("unknown dialect " + dialect.kind);
    }
  }

  /** What the first claim statement found: inserted, or the committed record (null if none seen). */
  record First(boolean inserted, IdempotencyRecord current) {
    static final First INSERTED = new First(true, null);
  }

  // ----------------------------------------------------------------------------------------------
  // transactions of our own

  /** Prepares a borrowed connection for {@link #begin}; returns its autocommit mode, to restore. */
  boolean open(Connection c) throws SQLException {
    boolean autoCommit = c.getAutoCommit();
    if (autoCommit) {
      c.setAutoCommit(false);
    }
    return autoCommit;
  }

  /** Begins a transaction of our own (implicit with autocommit off). */
  void begin(Connection c) throws SQLException {}

  void commit(Connection c) throws SQLException {
    c.commit();
  }

  void rollback(Connection c) throws SQLException {
    c.rollback();
  }

  /** Hands the connection back as {@link #open} found it. */
  void close(Connection c, boolean autoCommit) throws SQLException {
    if (autoCommit) {
      c.setAutoCommit(true);
    }
  }

  // ----------------------------------------------------------------------------------------------
  // savepoints

  /** A savepoint name for {@code role}; unique where the database replaces same-named ones. */
  String savepointName(String role) {
    return "once_" + role;
  }

  void savepoint(Connection c, String name) throws SQLException {
    exec(c, "SAVEPOINT " + name);
  }

  /** Rolls back to {@code name}, keeping it. */
  void rollbackTo(Connection c, String name) throws SQLException {
    exec(c, "ROLLBACK TO SAVEPOINT " + name);
  }

  /** Rolls back to {@code name} and releases it: as if nothing since it had happened. */
  void undo(Connection c, String name) throws SQLException {
    rollbackTo(c, name);
    release(c, name);
  }

  void release(Connection c, String name) throws SQLException {
    exec(c, "RELEASE SAVEPOINT " + name);
  }

  static void exec(Connection c, String sql) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }

  // ----------------------------------------------------------------------------------------------
  // claim and completion

  /**
   * {@code SAVEPOINT before} (if not null), then inserts {@code fresh} unless its key exists,
   * waiting at most the lock wait for a concurrent uncommitted claim of the key; if inserted,
   * {@code SAVEPOINT after} (if not null). Not inserted: the committed record, if seen.
   */
  abstract First insertOrRead(Connection c, IdempotencyRecord fresh, String before, String after)
      throws SQLException;

  /** Reads and locks the record of {@code key}, waiting at most the lock wait; null if none. */
  abstract IdempotencyRecord lockedRead(Connection c, IdempotencyKey key) throws SQLException;

  /**
   * Stores the outcome (IN_PROGRESS → COMPLETED under {@code token}), then releases
   * {@code release} if not null, then commits if {@code commit}.
   *
   * @return the rows updated (1 unless the record is not ours)
   */
  int complete(Connection c, IdempotencyKey key, long token, Outcome outcome, long at,
      long expiresAt, String release, boolean commit) throws SQLException {
    int rows;
    try (PreparedStatement ps = c.prepareStatement(dialect.completeSql)) {
      bindComplete(ps, key, token, outcome, at, expiresAt);
      rows = ps.executeUpdate();
    }
    if (rows != 1) {
      return rows;
    }
    if (release != null) {
      release(c, release);
    }
    if (commit) {
      commit(c);
    }
    return rows;
  }

  void bindComplete(PreparedStatement ps, IdempotencyKey key, long token, Outcome outcome,
      long at, long expiresAt) throws SQLException {
    int i = Rows.bindOutcome(ps, 1, outcome);
    ps.setLong(i++, at);
    i = dialect.bindExpiry(ps, i, expiresAt);
    i = Rows.bindKey(ps, i, key);
    ps.setLong(i, token);
  }

  /** Whether the failure is the lock wait running out: a concurrent claim holds the key. */
  abstract boolean isLockTimeout(SQLException e);

  /** Whether the claim may simply run again in a new transaction of our own. */
  boolean isTransient(SQLException e) {
    return !isLockTimeout(e) && dialect.isTransient(e);
  }

  // ==============================================================================================

  /** PostgreSQL: multi-statement round trips, {@code SET LOCAL lock_timeout} around the claim. */
  static final class Postgres extends TxSql {

    private static final String RESTORE_TIMEOUT =
        "SELECT set_config('lock_timeout', current_setting('once.lock_timeout'), true)";

    private final String[] claimSql = new String[4];
    private final String lockSql;
    private final String setTimeout;

    Postgres(Dialect dialect, Duration lockWait) {
      super(dialect, lockWait);
      // lock_timeout = 0 would mean "wait forever": a zero wait is 1 ms.
      long millis = Math.max(1, Math.min(Integer.MAX_VALUE, ceilMillis(lockWait)));
      // One statement saves the caller's lock_timeout (in a custom setting, transaction-local)
      // and sets ours: the inner set_config is an argument of the outer, so it runs first.
      setTimeout = "SELECT set_config('lock_timeout', CASE WHEN set_config('once.lock_timeout',"
          + " current_setting('lock_timeout'), true) IS NULL THEN NULL ELSE '" + millis + "ms'"
          + " END, true)";
      String claim = ((PostgresDialect) dialect).transactionalClaimSql(millis + "ms");
      for (int variant = 0; variant < 4; variant++) {
        StringBuilder sql = new StringBuilder();
        if ((variant & 1) != 0) {
          sql.append("SAVEPOINT ").append(savepointName(BEFORE)).append("; ");
        }
        sql.append(claim);
        if ((variant & 2) != 0) {
          sql.append("; SAVEPOINT ").append(savepointName(AFTER));
        }
        claimSql[variant] = sql.toString();
      }
      lockSql = bounded(dialect.lockSql + (lockWait.isZero() ? " NOWAIT" : ""));
    }

    /** {@code sql} between setting the lock timeout and restoring it: its result is the 2nd. */
    private String bounded(String sql) {
      return setTimeout + "; " + sql + "; " + RESTORE_TIMEOUT;
    }

    @Override
    First insertOrRead(Connection c, IdempotencyRecord fresh, String before, String after)
        throws SQLException {
      String sql = claimSql[(before != null ? 1 : 0) | (after != null ? 2 : 0)];
      IdempotencyRecord seen;
      try (PreparedStatement ps = c.prepareStatement(sql)) {
        Rows.bindKey(ps, dialect.bindInsert(ps, 1, fresh), fresh.key());
        try (ResultSet rs = resultSet(ps, 1)) {
          if (!rs.next()) {
            throw new SQLException("the claim statement returned no row");
          }
          if (rs.getBoolean(1)) {
            return First.INSERTED;
          }
          seen = Rows.read(rs, 1);
        }
      }
      // A row committed by a racer after the statement's snapshot (the insert waited for it).
      return new First(false, seen != null ? seen : dialect.read(c, fresh.key()));
    }

    @Override
    IdempotencyRecord lockedRead(Connection c, IdempotencyKey key) throws SQLException {
      try (PreparedStatement ps = c.prepareStatement(lockSql)) {
        Rows.bindKey(ps, 1, key);
        try (ResultSet rs = resultSet(ps, 2)) {
          return rs.next() ? Rows.read(rs) : null;
        }
      }
    }

    /** Runs a multi-statement {@code ps}; returns its {@code n}th result set (left open). */
    private static ResultSet resultSet(PreparedStatement ps, int n) throws SQLException {
      boolean isResultSet = ps.execute();
      int seen = 0;
      while (true) {
        if (isResultSet) {
          if (++seen == n) {
            return ps.getResultSet();
          }
        } else if (ps.getUpdateCount() == -1) {
          throw new SQLException("the claim statement returned " + seen + " result sets, not "
              + n);
        }
        isResultSet = ps.getMoreResults(Statement.KEEP_CURRENT_RESULT);
      }
    }

    @Override
    int complete(Connection c, IdempotencyKey key, long token, Outcome outcome, long at,
        long expiresAt, String release, boolean commit) throws SQLException {
      if (release == null && !commit) {
        return super.complete(c, key, token, outcome, at, expiresAt, null, false);
      }
      // One round trip: the UPDATE, then the RELEASE or the COMMIT. Should the UPDATE match no
      // row, nothing after it may run: 1 / count(*) then fails the statement (division by zero),
      // which skips the rest of the batch.
      String sql = "WITH done AS (" + dialect.completeSql + " RETURNING 1)"
          + " SELECT 1 / count(*) FROM done"
          + (release != null ? "; RELEASE SAVEPOINT " + release : "")
          + (commit ? "; COMMIT" : "");
      try (PreparedStatement ps = c.prepareStatement(sql)) {
        bindComplete(ps, key, token, outcome, at, expiresAt);
        try {
          ps.execute();
        } catch (SQLException e) {
          if ("22012".equals(e.getSQLState())) {
            return 0; // division by zero: the record was not IN_PROGRESS under the token
          }
          throw e;
        }
      }
      return 1;
    }

    @Override
    void undo(Connection c, String name) throws SQLException {
      exec(c, "ROLLBACK TO SAVEPOINT " + name + "; RELEASE SAVEPOINT " + name);
    }

    @Override
    boolean isLockTimeout(SQLException e) {
      return "55P03".equals(e.getSQLState()); // lock_not_available: lock_timeout and NOWAIT
    }
  }

  // ==============================================================================================

  /**
   * MariaDB ({@code SET STATEMENT … FOR}) and MySQL (session variable set and restored). The
   * product is told apart on the first connection.
   */
  static final class MariaDb extends TxSql {

    private static final AtomicLong SAVEPOINTS = new AtomicLong();

    private final long seconds;
    private final String prefix;
    private volatile Boolean mysql;

    MariaDb(Dialect dialect, Duration lockWait) {
      super(dialect, lockWait);
      long millis = ceilMillis(lockWait);
      seconds = Math.min(100_000_000L, (millis + 999) / 1000);
      prefix = "SET STATEMENT innodb_lock_wait_timeout = " + seconds + " FOR ";
    }

    /** MariaDB replaces a savepoint of the same name: nested uses need names of their own. */
    @Override
    String savepointName(String role) {
      return "once_" + role + "_" + SAVEPOINTS.incrementAndGet();
    }

    private boolean isMySql(Connection c) throws SQLException {
      Boolean known = mysql;
      if (known == null) {
        String product = String.valueOf(c.getMetaData().getDatabaseProductName());
        known = !product.toLowerCase(Locale.ROOT).contains("mariadb");
        mysql = known;
      }
      return known;
    }

    @Override
    First insertOrRead(Connection c, IdempotencyRecord fresh, String before, String after)
        throws SQLException {
      if (before != null) {
        savepoint(c, before);
      }
      boolean inserted;
      if (isMySql(c)) {
        inserted = withSessionTimeout(c, () -> insert(c, dialect.insertSql, fresh));
      } else {
        inserted = insert(c, prefix + dialect.insertSql, fresh);
      }
      if (inserted) {
        if (after != null) {
          savepoint(c, after);
        }
        return First.INSERTED;
      }
      // A consistent read sees the row at READ COMMITTED; an older REPEATABLE READ view may
      // not, and then the claim reads it locked.
      return new First(false, dialect.read(c, fresh.key()));
    }

    private boolean insert(Connection c, String sql, IdempotencyRecord fresh)
        throws SQLException {
      try (PreparedStatement ps = c.prepareStatement(sql)) {
        dialect.bindInsert(ps, 1, fresh);
        return ps.executeUpdate() == 1;
      } catch (SQLException e) {
        if (e.getErrorCode() == 1062) {
          return false; // duplicate key: the record exists (committed)
        }
        throw e;
      }
    }

    @Override
    IdempotencyRecord lockedRead(Connection c, IdempotencyKey key) throws SQLException {
      if (isMySql(c)) {
        String sql = dialect.lockSql + (lockWait.isZero() ? " NOWAIT" : "");
        return withSessionTimeout(c, () -> read(c, sql, key));
      }
      return read(c, prefix + dialect.lockSql, key);
    }

    private static IdempotencyRecord read(Connection c, String sql, IdempotencyKey key)
        throws SQLException {
      try (PreparedStatement ps = c.prepareStatement(sql)) {
        Rows.bindKey(ps, 1, key);
        try (ResultSet rs = ps.executeQuery()) {
          return rs.next() ? Rows.read(rs) : null;
        }
      }
    }

    /** MySQL: sets the session's lock wait for {@code work}, and restores it. */
    private <T> T withSessionTimeout(Connection c, SqlWork<T> work) throws SQLException {
      exec(c, "SET @once_lock_wait = @@SESSION.innodb_lock_wait_timeout,"
          + " SESSION innodb_lock_wait_timeout = " + Math.max(1, seconds));
      try {
        return work.run();
      } finally {
        exec(c, "SET SESSION innodb_lock_wait_timeout = @once_lock_wait");
      }
    }

    @Override
    boolean isLockTimeout(SQLException e) {
      return e.getErrorCode() == 1205 // ER_LOCK_WAIT_TIMEOUT, also NOWAIT's answer on MariaDB
          || e.getErrorCode() == 3572; // MySQL's NOWAIT: ER_LOCK_NOWAIT
    }
  }

  // ==============================================================================================

  /**
   * SQLite: one writer at a time. Our own transactions start with {@code BEGIN IMMEDIATE} (the
   * write lock first, waiting up to the busy timeout); the JDBC connection stays in autocommit
   * mode, the transaction is explicit.
   */
  static final class Sqlite extends TxSql {

    Sqlite(Dialect dialect, Duration lockWait) {
      super(dialect, lockWait);
    }

    @Override
    boolean open(Connection c) throws SQLException {
      boolean autoCommit = c.getAutoCommit();
      if (!autoCommit) {
        c.setAutoCommit(true);
      }
      return autoCommit;
    }

    @Override
    void begin(Connection c) throws SQLException {
      exec(c, "BEGIN IMMEDIATE");
    }

    @Override
    void commit(Connection c) throws SQLException {
      exec(c, "COMMIT");
    }

    @Override
    void rollback(Connection c) throws SQLException {
      try {
        exec(c, "ROLLBACK");
      } catch (SQLException e) {
        String message = String.valueOf(e.getMessage());
        if (!message.contains("no transaction is active")) {
          throw e; // else BEGIN never happened: nothing to roll back
        }
      }
    }

    @Override
    void close(Connection c, boolean autoCommit) throws SQLException {
      if (!autoCommit) {
        c.setAutoCommit(false);
      }
    }

    @Override
    First insertOrRead(Connection c, IdempotencyRecord fresh, String before, String after)
        throws SQLException {
      if (before != null) {
        savepoint(c, before);
      }
      if (dialect.insertIfAbsent(c, fresh)) {
        if (after != null) {
          savepoint(c, after);
        }
        return First.INSERTED;
      }
      return new First(false, dialect.read(c, fresh.key()));
    }

    @Override
    IdempotencyRecord lockedRead(Connection c, IdempotencyKey key) throws SQLException {
      return dialect.read(c, key); // the INSERT already holds the database's write lock
    }

    @Override
    boolean isLockTimeout(SQLException e) {
      return false; // SQLITE_BUSY says the database is busy, not that this key is
    }
  }

  // ----------------------------------------------------------------------------------------------

  static final String BEFORE = "before";
  static final String AFTER = "claimed";

  static long ceilMillis(Duration d) {
    long millis = d.toMillis();
    return d.minusMillis(millis).isZero() ? millis : millis + 1;
  }
}
