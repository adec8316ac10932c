package dev.once.testkit;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * {@link Effects} as rows of a PostgreSQL table of their own, created on construction and dropped
 * (best effort) when the JVM exits; no unique constraint, so doubles show. For tests whose effects
 * should live in the database beside a store's records.
 */
public final class TableEffects implements Effects {

  private final DataSource dataSource;
  private final String table =
      "effects_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);

  /**
   * Creates the table.
   *
   * @param dataSource a PostgreSQL database
   * @throws IllegalStateException if the table cannot be created
   */
  public TableEffects(DataSource dataSource) {
    this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
    TestPostgres.execute(dataSource, "CREATE TABLE " + table
        + " (seq BIGSERIAL PRIMARY KEY, event_id TEXT NOT NULL, effect_group TEXT NOT NULL)");
    TestPostgres.dropAtExit(dataSource, table);
  }

  /**
   * The table's name (unqualified), for tests that write effects in their own SQL.
   *
   * @return {@code effects_} and a random suffix
   */
  public String table() {
    return table;
  }

  @Override
  public void record(String eventId, String group) {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(
            "INSERT INTO " + table + " (event_id, effect_group) VALUES (?, ?)")) {
      ps.setString(1, Objects.requireNonNull(eventId, "eventId"));
      ps.setString(2, Objects.requireNonNull(group, "group"));
      ps.executeUpdate();
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  @Override
  public Map<String, Integer> counts() {
    Map<String, Integer> counts = new HashMap<>();
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(
            "SELECT event_id, count(*) FROM " + table + " GROUP BY event_id")) {
      while (rs.next()) {
        counts.put(rs.getString(1), rs.getInt(2));
      }
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
    return counts;
  }

  @Override
  public List<String> sequence(String group) {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement("SELECT event_id FROM " + table
            + " WHERE effect_group = ? ORDER BY seq")) {
      ps.setString(1, group);
      try (ResultSet rs = ps.executeQuery()) {
        return eventIds(rs);
      }
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  @Override
  public List<String> sequence() {
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT event_id FROM " + table + " ORDER BY seq")) {
      return eventIds(rs);
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  private static List<String> eventIds(ResultSet rs) throws SQLException {
    List<String> out = new ArrayList<>();
    while (rs.next()) {
      out.add(rs.getString(1));
    }
    return out;
  }
}
