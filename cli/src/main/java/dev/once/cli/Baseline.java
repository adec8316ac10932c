package dev.once.cli;

import dev.once.jdbc.JdbcDialect;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.ConcurrentHashMap;
import javax.sql.DataSource;

/**
 * What {@code once bench} compares Once with: the store's raw primitives, through the same client,
 * doing what a hand-written idempotency check does: insert the key if absent, then store the response
 * ("new keys"); read the stored response ("replays"). No fencing, no lease, no fingerprint check:
 * the floor Once's extra guarantees are measured against.
 */
interface Baseline extends AutoCloseable {

  /** What one operation of each workload is, for the report. */
  String describeNewKey();

  String describeReplay();

  /** Claims {@code key} (insert if absent) and stores {@code response}: two writes. */
  void newKey(String key, byte[] requestHash, byte[] response);

  /**
   * Like {@link #newKey(String, byte[], byte[])}, with {@code between} (if not null) run between
   * the two writes; only SQL baselines have a connection to run it on.
   */
  default void newKey(String key, byte[] requestHash, byte[] response, BusinessWrite between) {
    if (between != null) {
      throw new UnsupportedOperationException("a business write needs a SQL store");
    }
    newKey(key, requestHash, response);
  }

  /** A business write between the claim and the stored response, on the same connection. */
  @FunctionalInterface
  interface BusinessWrite {
    void apply(Connection c) throws SQLException;
  }

  /** Reads the response stored for {@code key}. */
  byte[] replay(String key);

  @Override
  void close();

  /**
   * Lettuce on its own connection to the same server: {@code SET key started NX PX lease}, then
   * {@code SET key response PX retention}; a replay is {@code GET key}.
   */
  final class Redis implements Baseline {
    private final AutoCloseable client;
    private final io.lettuce.core.api.StatefulConnection<String, String> connection;
    private final io.lettuce.core.api.sync.RedisStringCommands<String, String> commands;
    private final String prefix = "once-bench-raw:";

    Redis(String uri, boolean cluster) {
      if (cluster) {
        String scheme = uri.substring(0, uri.indexOf("://"));
        String plain = (scheme.startsWith("rediss") ? "rediss" : "redis") + uri.substring(
            scheme.length());
        io.lettuce.core.cluster.RedisClusterClient c = io.lettuce.core.cluster.RedisClusterClient
            .create(io.lettuce.core.cluster.RedisClusterURIUtil.toRedisURIs(
                java.net.URI.create(plain)));
        io.lettuce.core.cluster.api.StatefulRedisClusterConnection<String, String> conn =
            c.connect();
        client = c::shutdown;
        connection = conn;
        commands = conn.sync();
      } else {
        io.lettuce.core.RedisClient c = io.lettuce.core.RedisClient.create(uri);
        io.lettuce.core.api.StatefulRedisConnection<String, String> conn = c.connect();
        client = c::shutdown;
        connection = conn;
        commands = conn.sync();
      }
    }

    @Override
    public String describeNewKey() {
      return "SET NX PX + SET PX (Lettuce)";
    }

    @Override
    public String describeReplay() {
      return "GET (Lettuce)";
    }

    @Override
    public void newKey(String key, byte[] requestHash, byte[] response) {
      String k = prefix + key;
      if (commands.set(k, "started", io.lettuce.core.SetArgs.Builder.nx().px(30_000)) == null) {
        throw new IllegalStateException("bench keys must be new");
      }
      commands.set(k, new String(response, java.nio.charset.StandardCharsets.UTF_8),
          io.lettuce.core.SetArgs.Builder.px(600_000));
    }

    @Override
    public byte[] replay(String key) {
      String value = commands.get(prefix + key);
      return value == null ? null : value.getBytes(java.nio.charset.StandardCharsets.UTF_8);
    }

    @Override
    public void close() {
      connection.close();
      try {
        client.close();
      } catch (Exception e) {
        // shutting down anyway
      }
    }
  }

  /** A {@link ConcurrentHashMap}: what {@code InMemoryStore} is built on. */
  final class InMemory implements Baseline {
    private final ConcurrentHashMap<String, byte[]> map = new ConcurrentHashMap<>();
    private static final byte[] STARTED = new byte[0];

    @Override
    public String describeNewKey() {
      return "ConcurrentHashMap putIfAbsent + put";
    }

    @Override
    public String describeReplay() {
      return "ConcurrentHashMap get";
    }

    @Override
    public void newKey(String key, byte[] requestHash, byte[] response) {
      if (map.putIfAbsent(key, STARTED) != null) {
        throw new IllegalStateException("bench keys must be new");
      }
      map.put(key, response);
    }

    @Override
    public byte[] replay(String key) {
      return map.get(key);
    }

    @Override
    public void close() {
      map.clear();
    }
  }

  /**
   * A table of the articles' shape (key as primary key, status, request hash, response bytes) in
   * the same database and through the same pool as Once's records; dropped on close.
   */
  final class Sql implements Baseline {
    private final DataSource pool;
    private final String table;
    private final String insert;
    private final String update;
    private final String select;

    Sql(DataSource pool, JdbcDialect dialect, String table) {
      this.pool = pool;
      this.table = table;
      String bytes = switch (dialect) {
        case POSTGRESQL -> "bytea";
        case MARIADB -> "LONGBLOB";
        case SQLITE -> "BLOB";
      };
      String ddl = "CREATE TABLE IF NOT EXISTS " + table + " (idempotency_key VARCHAR(255) PRIMARY "
          + "KEY, status VARCHAR(16) NOT NULL, request_hash " + bytes + ", response_body " + bytes
          + ", created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL)";
      String columns = " (idempotency_key, status, request_hash, created_at, updated_at)"
          + " VALUES (?, 'started', ?, ?, ?)";
      this.insert = dialect == JdbcDialect.MARIADB
          ? "INSERT IGNORE INTO " + table + columns
          : "INSERT INTO " + table + columns + " ON CONFLICT DO NOTHING";
      this.update = "UPDATE " + table + " SET status = 'completed', response_body = ?, "
          + "updated_at = ? WHERE idempotency_key = ?";
      this.select = "SELECT status, response_body FROM " + table + " WHERE idempotency_key = ?";
      try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
        s.execute("DROP TABLE IF EXISTS " + table);
        s.execute(ddl);
      } catch (SQLException e) {
        throw new IllegalStateException("cannot create the baseline table " + table + ": "
            + e.getMessage(), e);
      }
    }

    @Override
    public String describeNewKey() {
      return "INSERT ... ON CONFLICT DO NOTHING + UPDATE";
    }

    @Override
    public String describeReplay() {
      return "SELECT by key";
    }

    @Override
    public void newKey(String key, byte[] requestHash, byte[] response) {
      newKey(key, requestHash, response, null);
    }

    /**
     * The articles' sequence with the business write in the middle, each statement in autocommit:
     * claim, {@code between} (if not null), store the response.
     */
    @Override
    public void newKey(String key, byte[] requestHash, byte[] response, BusinessWrite between) {
      long now = System.currentTimeMillis() * 1000;
      try (Connection c = pool.getConnection()) {
        try (PreparedStatement s = c.prepareStatement(insert)) {
          s.setString(1, key);
          s.setBytes(2, requestHash);
          s.setLong(3, now);
          s.setLong(4, now);
          if (s.executeUpdate() == 0) {
            throw new IllegalStateException("bench keys must be new");
          }
        }
        if (between != null) {
          between.apply(c);
        }
        try (PreparedStatement s = c.prepareStatement(update)) {
          s.setBytes(1, response);
          s.setLong(2, now);
          s.setString(3, key);
          s.executeUpdate();
        }
      } catch (SQLException e) {
        throw new IllegalStateException(e.getMessage(), e);
      }
    }

    @Override
    public byte[] replay(String key) {
      try (Connection c = pool.getConnection();
           PreparedStatement s = c.prepareStatement(select)) {
        s.setString(1, key);
        try (ResultSet rs = s.executeQuery()) {
          return rs.next() ? rs.getBytes(2) : null;
        }
      } catch (SQLException e) {
        throw new IllegalStateException(e.getMessage(), e);
      }
    }

    @Override
    public void close() {
      try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
        s.execute("DROP TABLE IF EXISTS " + table);
      } catch (SQLException e) {
        // Scratch data; a leftover table is harmless and the next bench drops it.
      }
    }
  }
}
