package dev.once.cli.chaos;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * The two downstream systems the workers of {@code once chaos} call from inside
 * {@code Once.execute}, in a SQLite file of the run directory ({@value #FILE}) apart from the
 * queue and the store:
 *
 * <ul>
 *   <li>{@code raw_effects}: a log that appends a row on every call, as a mail or SMS gateway
 *       without idempotency keys would send every time. Every run of the work shows, so it counts
 *       honestly how often the work ran twice (a worker killed after the effect and before the
 *       outcome was stored is taken over and runs again);
 *   <li>{@code dedup_effects}: a service that deduplicates on the downstream key it is given
 *       ({@code INSERT ... ON CONFLICT DO NOTHING} keyed by it), as a payment gateway does with an
 *       idempotency key. Given {@code Attempt.key()}, it must hold exactly one row per event.
 * </ul>
 *
 * Not thread-safe: one instance per thread.
 */
final class ChaosDownstream implements AutoCloseable {

  static final String FILE = "downstream.db";

  private final Connection connection;
  private final PreparedStatement raw;
  private final PreparedStatement dedup;

  private ChaosDownstream(Connection connection) throws SQLException {
    this.connection = connection;
    this.raw = connection.prepareStatement(
        "INSERT INTO raw_effects (event, worker, token, at) VALUES (?, ?, ?, ?)");
    this.dedup = connection.prepareStatement("INSERT INTO dedup_effects (downstream_key, event, "
        + "worker, token, at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (downstream_key) DO NOTHING");
  }

  /** Opens the downstream file of {@code runDirectory}, creating its tables if missing. */
  static ChaosDownstream open(Path runDirectory) {
    try {
      Connection connection = ChaosQueue.connect(runDirectory.resolve(FILE));
      try (Statement s = connection.createStatement()) {
        s.execute("CREATE TABLE IF NOT EXISTS raw_effects (id INTEGER PRIMARY KEY, "
            + "event TEXT NOT NULL, worker INTEGER NOT NULL, token INTEGER NOT NULL, "
            + "at INTEGER NOT NULL)");
        s.execute("CREATE TABLE IF NOT EXISTS dedup_effects (downstream_key TEXT PRIMARY KEY, "
            + "event TEXT NOT NULL, worker INTEGER NOT NULL, token INTEGER NOT NULL, "
            + "at INTEGER NOT NULL)");
      }
      return new ChaosDownstream(connection);
    } catch (SQLException e) {
      throw new ChaosQueue.HarnessFailure("cannot open the downstream file "
          + runDirectory.resolve(FILE) + ": " + e.getMessage(), e);
    }
  }

  /** The connection, for the audit's queries. */
  Connection connection() {
    return connection;
  }

  /** The effect without deduplication: appends a row, every time. */
  void append(String event, int worker, long token) {
    try {
      raw.setString(1, event);
      raw.setInt(2, worker);
      raw.setLong(3, token);
      raw.setLong(4, System.currentTimeMillis());
      raw.executeUpdate();
    } catch (SQLException e) {
      throw new ChaosQueue.HarnessFailure("the downstream log failed: " + e.getMessage(), e);
    }
  }

  /**
   * The effect deduplicated on {@code downstreamKey}.
   *
   * @return false if an effect with that key was made before (this call changed nothing)
   */
  boolean deduplicated(String downstreamKey, String event, int worker, long token) {
    try {
      dedup.setString(1, downstreamKey);
      dedup.setString(2, event);
      dedup.setInt(3, worker);
      dedup.setLong(4, token);
      dedup.setLong(5, System.currentTimeMillis());
      return dedup.executeUpdate() == 1;
    } catch (SQLException e) {
      throw new ChaosQueue.HarnessFailure("the deduplicating downstream failed: "
          + e.getMessage(), e);
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
