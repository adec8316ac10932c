package dev.once.rabbitmq;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import javax.sql.DataSource;

/** Effects as rows of a PostgreSQL table of their own (no unique constraint: doubles show). */
final class TableEffects implements Effects {

  private final DataSource dataSource;
  private final String table =
      "effects_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);

  TableEffects(DataSource dataSource) {
    this.dataSource = dataSource;
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute("CREATE TABLE " + table
          + " (seq BIGSERIAL PRIMARY KEY, event_id TEXT NOT NULL)");
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
    Postgres.dropAtExit(table);
  }

  @Override
  public void record(String eventId) {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(
            "INSERT INTO " + table + " (event_id) VALUES (?)")) {
      ps.setString(1, eventId);
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
  public List<String> sequence() {
    List<String> out = new ArrayList<>();
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT event_id FROM " + table + " ORDER BY seq")) {
      while (rs.next()) {
        out.add(rs.getString(1));
      }
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
    return out;
  }
}
