package dev.once.cli.chaos;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import org.sqlite.SQLiteConfig;

/**
 * The durable at-least-once queue of {@code once chaos}, in a SQLite file of the run directory
 * ({@value #FILE}, WAL) that every process opens: the coordinator produces into it, the worker
 * processes receive from it.
 *
 * <p>It behaves as SQS does: {@link #receive} hands out the oldest visible message and hides it
 * for a visibility timeout under a new receipt; only {@link #finish} with that receipt acknowledges
 * it (or makes it visible again sooner); a message whose worker died, froze or failed becomes
 * visible again when the timeout passes, and is delivered again. A receipt that is no longer the
 * current one (the message was redelivered meanwhile) acknowledges nothing.
 *
 * <p>The same file keeps what the run needs for its audit: the events produced and one row per
 * finished delivery, with the answer Once gave, written in the same transaction as the
 * acknowledgement.
 *
 * <p>Not thread-safe: one instance per thread. Every write is one {@code BEGIN IMMEDIATE}
 * transaction; a process killed in the middle of one leaves nothing of it.
 */
final class ChaosQueue implements AutoCloseable {

  static final String FILE = "queue.db";

  /** How long a write waits for another process's lock: longer than any freeze of a worker. */
  static final int BUSY_TIMEOUT_MILLIS = 60_000;

  /** What one delivery got from Once. */
  enum Answer {
    /** The work ran in this delivery and its outcome was stored. */
    RAN,
    /** The stored outcome was replayed. */
    REPLAYED,
    /** Another worker held a live lease: made visible again after the lease. */
    IN_PROGRESS,
    /** The work ran but another worker had taken over: the late writes were refused (fenced). */
    LEASE_LOST,
    /** The store failed (restarted, connection cut): nothing recorded as an outcome. */
    STORE_ERROR,
    /** The run's own files (queue, downstream) failed, e.g. a lock held by a frozen worker. */
    HARNESS_ERROR,
    /** Anything else: a bug. */
    ERROR
  }

  /** A received message. */
  record Message(long id, String event, int amount, long receipt) {}

  /**
   * A finished delivery, for the audit.
   *
   * @param outcome the value Once returned (ran or replayed), else null
   * @param token   the fencing token of the value, or of the attempt that ran; 0 if none
   * @param takeover whether the work ran as a takeover (token + 1) in this delivery
   * @param repeated whether the work ran here and found its deduplicated effect already made
   */
  record Delivery(Message message, int worker, Answer answer, String outcome, long token,
      boolean takeover, boolean repeated, long startedMillis, long endedMillis, String error) {}

  /** The run's own files failed. */
  static final class HarnessFailure extends RuntimeException {
    private static final long serialVersionUID = 1L;

    HarnessFailure(String message, Throwable cause) {
      super(message, cause);
    }
  }

  private final Connection connection;

  private ChaosQueue(Connection connection) {
    this.connection = connection;
  }

  /** A connection to a SQLite file of the run: WAL, a long busy timeout, synchronous=NORMAL. */
  static Connection connect(Path file) throws SQLException {
    SQLiteConfig config = new SQLiteConfig();
    config.setJournalMode(SQLiteConfig.JournalMode.WAL);
    // A process killed (not a machine losing power) loses no commit with NORMAL in WAL mode.
    config.setSynchronous(SQLiteConfig.SynchronousMode.NORMAL);
    config.setBusyTimeout(BUSY_TIMEOUT_MILLIS);
    return config.createConnection("jdbc:sqlite:" + file.toAbsolutePath());
  }

  /** Opens the queue of {@code runDirectory}, creating its tables if missing. */
  static ChaosQueue open(Path runDirectory) {
    try {
      Connection connection = connect(runDirectory.resolve(FILE));
      try (Statement s = connection.createStatement()) {
        s.execute("CREATE TABLE IF NOT EXISTS events (event TEXT PRIMARY KEY, "
            + "amount INTEGER NOT NULL, produced_at INTEGER NOT NULL)");
        s.execute("CREATE TABLE IF NOT EXISTS messages (id INTEGER PRIMARY KEY, "
            + "event TEXT NOT NULL, amount INTEGER NOT NULL, duplicate INTEGER NOT NULL, "
            + "visible_at INTEGER NOT NULL, receipt INTEGER NOT NULL DEFAULT 0, "
            + "receives INTEGER NOT NULL DEFAULT 0, acked_at INTEGER)");
        s.execute("CREATE INDEX IF NOT EXISTS messages_ready ON messages (visible_at) "
            + "WHERE acked_at IS NULL");
        s.execute("CREATE TABLE IF NOT EXISTS deliveries (id INTEGER PRIMARY KEY, "
            + "message INTEGER NOT NULL, event TEXT NOT NULL, worker INTEGER NOT NULL, "
            + "answer TEXT NOT NULL, outcome TEXT, token INTEGER NOT NULL, "
            + "takeover INTEGER NOT NULL, repeated INTEGER NOT NULL, acked INTEGER NOT NULL, "
            + "started_at INTEGER NOT NULL, ended_at INTEGER NOT NULL, error TEXT)");
      }
      return new ChaosQueue(connection);
    } catch (SQLException e) {
      throw new HarnessFailure("cannot open the queue " + runDirectory.resolve(FILE) + ": "
          + e.getMessage(), e);
    }
  }

  /** The connection, for the audit's queries. */
  Connection connection() {
    return connection;
  }

  /** One event to produce: its message, and a duplicate visible after {@code duplicateDelay}. */
  record Produced(String event, int amount, long duplicateDelayMillis) {
    boolean duplicated() {
      return duplicateDelayMillis >= 0;
    }
  }

  /** Enqueues {@code events} (and their duplicates) in one transaction. */
  void produce(List<Produced> events, long nowMillis) {
    inTransaction(() -> {
      try (PreparedStatement event = connection.prepareStatement(
               "INSERT INTO events (event, amount, produced_at) VALUES (?, ?, ?)");
           PreparedStatement message = connection.prepareStatement("INSERT INTO messages "
               + "(event, amount, duplicate, visible_at) VALUES (?, ?, ?, ?)")) {
        for (Produced p : events) {
          event.setString(1, p.event());
          event.setInt(2, p.amount());
          event.setLong(3, nowMillis);
          event.addBatch();
          add(message, p, false, nowMillis);
          if (p.duplicated()) {
            add(message, p, true, nowMillis + p.duplicateDelayMillis());
          }
        }
        event.executeBatch();
        message.executeBatch();
      }
      return null;
    }, "produce");
  }

  private static void add(PreparedStatement message, Produced p, boolean duplicate, long visibleAt)
      throws SQLException {
    message.setString(1, p.event());
    message.setInt(2, p.amount());
    message.setInt(3, duplicate ? 1 : 0);
    message.setLong(4, visibleAt);
    message.addBatch();
  }

  /**
   * The oldest message visible at {@code nowMillis}, hidden until {@code nowMillis +
   * visibilityMillis} under a new receipt; null when none is visible.
   */
  Message receive(long nowMillis, long visibilityMillis) {
    // A read first, outside any transaction: in WAL mode it takes no lock, so idle workers
    // polling an empty queue never queue up for the write lock.
    try (PreparedStatement any = connection.prepareStatement("SELECT 1 FROM messages "
        + "WHERE acked_at IS NULL AND visible_at <= ? LIMIT 1")) {
      any.setLong(1, nowMillis);
      try (ResultSet rs = any.executeQuery()) {
        if (!rs.next()) {
          return null;
        }
      }
    } catch (SQLException e) {
      throw new HarnessFailure("the queue failed to receive: " + e.getMessage(), e);
    }
    return inTransaction(() -> {
      long id;
      String event;
      int amount;
      try (PreparedStatement next = connection.prepareStatement("SELECT id, event, amount "
          + "FROM messages WHERE acked_at IS NULL AND visible_at <= ? ORDER BY visible_at "
          + "LIMIT 1")) {
        next.setLong(1, nowMillis);
        try (ResultSet rs = next.executeQuery()) {
          if (!rs.next()) {
            return null;
          }
          id = rs.getLong(1);
          event = rs.getString(2);
          amount = rs.getInt(3);
        }
      }
      long receipt = ThreadLocalRandom.current().nextLong(1, Long.MAX_VALUE);
      try (PreparedStatement hide = connection.prepareStatement("UPDATE messages SET "
          + "visible_at = ?, receipt = ?, receives = receives + 1 WHERE id = ?")) {
        hide.setLong(1, nowMillis + visibilityMillis);
        hide.setLong(2, receipt);
        hide.setLong(3, id);
        hide.executeUpdate();
      }
      return new Message(id, event, amount, receipt);
    }, "receive");
  }

  /**
   * Records {@code delivery} and, in the same transaction, acknowledges its message
   * ({@code visibleAtMillis} negative) or makes it visible again at {@code visibleAtMillis}; both
   * only under the message's current receipt.
   *
   * @return whether the receipt was still the current one
   */
  boolean finish(Delivery delivery, long visibleAtMillis) {
    boolean ack = visibleAtMillis < 0;
    return inTransaction(() -> {
      int changed;
      try (PreparedStatement update = connection.prepareStatement(ack
          ? "UPDATE messages SET acked_at = ? WHERE id = ? AND receipt = ? AND acked_at IS NULL"
          : "UPDATE messages SET visible_at = ? WHERE id = ? AND receipt = ? "
              + "AND acked_at IS NULL")) {
        update.setLong(1, ack ? delivery.endedMillis() : visibleAtMillis);
        update.setLong(2, delivery.message().id());
        update.setLong(3, delivery.message().receipt());
        changed = update.executeUpdate();
      }
      try (PreparedStatement insert = connection.prepareStatement("INSERT INTO deliveries "
          + "(message, event, worker, answer, outcome, token, takeover, repeated, acked, "
          + "started_at, ended_at, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")) {
        insert.setLong(1, delivery.message().id());
        insert.setString(2, delivery.message().event());
        insert.setInt(3, delivery.worker());
        insert.setString(4, delivery.answer().name());
        insert.setString(5, delivery.outcome());
        insert.setLong(6, delivery.token());
        insert.setInt(7, delivery.takeover() ? 1 : 0);
        insert.setInt(8, delivery.repeated() ? 1 : 0);
        insert.setInt(9, ack && changed == 1 ? 1 : 0);
        insert.setLong(10, delivery.startedMillis());
        insert.setLong(11, delivery.endedMillis());
        insert.setString(12, delivery.error());
        insert.executeUpdate();
      }
      return changed == 1;
    }, "finish a delivery");
  }

  /** Messages not yet acknowledged. */
  long pending() {
    return count("SELECT COUNT(*) FROM messages WHERE acked_at IS NULL");
  }

  /** Deliveries finished (recorded) so far. */
  long finished() {
    return count("SELECT COALESCE(MAX(id), 0) FROM deliveries");
  }

  long count(String sql) {
    try (Statement s = connection.createStatement(); ResultSet rs = s.executeQuery(sql)) {
      return rs.next() ? rs.getLong(1) : 0;
    } catch (SQLException e) {
      throw new HarnessFailure("the queue failed to count: " + e.getMessage(), e);
    }
  }

  @FunctionalInterface
  private interface Body<T> {
    T run() throws SQLException;
  }

  private <T> T inTransaction(Body<T> body, String what) {
    try (Statement s = connection.createStatement()) {
      s.execute("BEGIN IMMEDIATE");
      try {
        T result = body.run();
        s.execute("COMMIT");
        return result;
      } catch (SQLException | RuntimeException e) {
        try {
          s.execute("ROLLBACK");
        } catch (SQLException ignored) {
          // the transaction is gone already (the connection failed)
        }
        throw e;
      }
    } catch (SQLException e) {
      throw new HarnessFailure("the queue failed to " + what + ": " + e.getMessage(), e);
    }
  }

  @Override
  public void close() {
    try {
      connection.close();
    } catch (SQLException ignored) {
      // closing
    }
  }
}
