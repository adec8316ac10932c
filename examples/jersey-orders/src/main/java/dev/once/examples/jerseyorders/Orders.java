package dev.once.examples.jerseyorders;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import javax.sql.DataSource;

/** The orders table, in the SQLite file that holds Once's records too. */
public final class Orders {

  /** Prices in cents. */
  static final Map<String, Long> CATALOG = Map.of("book", 1200L, "lamp", 4500L, "pen", 150L);

  private final DataSource dataSource;

  public Orders(DataSource dataSource) {
    this.dataSource = dataSource;
  }

  /** Creates the table if it is missing. */
  public void createSchema() throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      // request_key is the attempt's downstream key: one order per Idempotency-Key, even when a
      // retry re-runs the resource after a crash (the claim's lease passed before the answer was
      // stored).
      s.execute("CREATE TABLE IF NOT EXISTS orders ("
          + " id TEXT PRIMARY KEY,"
          + " request_key TEXT NOT NULL UNIQUE,"
          + " customer TEXT NOT NULL,"
          + " sku TEXT NOT NULL,"
          + " quantity INTEGER NOT NULL CHECK (quantity > 0),"
          + " total INTEGER NOT NULL)");
    }
  }

  /**
   * Inserts the order of {@code requestKey} unless it exists, and returns it: a second run for one
   * key finds the first run's order instead of adding another.
   */
  public Order place(String requestKey, OrderRequest request) throws SQLException {
    try (Connection c = dataSource.getConnection()) {
      try (PreparedStatement insert = c.prepareStatement("INSERT INTO orders"
          + " (id, request_key, customer, sku, quantity, total) VALUES (?, ?, ?, ?, ?, ?)"
          + " ON CONFLICT (request_key) DO NOTHING")) {
        insert.setString(1, "ord_" + UUID.randomUUID().toString().substring(0, 8));
        insert.setString(2, requestKey);
        insert.setString(3, request.customer());
        insert.setString(4, request.sku());
        insert.setInt(5, request.quantity());
        insert.setLong(6, CATALOG.get(request.sku()) * request.quantity());
        insert.executeUpdate();
      }
      return select(c, "request_key", requestKey).orElseThrow();
    }
  }

  public Optional<Order> find(String id) throws SQLException {
    try (Connection c = dataSource.getConnection()) {
      return select(c, "id", id);
    }
  }

  public long count() throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
        ResultSet rows = s.executeQuery("SELECT count(*) FROM orders")) {
      rows.next();
      return rows.getLong(1);
    }
  }

  private static Optional<Order> select(Connection c, String column, String value)
      throws SQLException {
    try (PreparedStatement select = c.prepareStatement(
        "SELECT id, customer, sku, quantity, total FROM orders WHERE " + column + " = ?")) {
      select.setString(1, value);
      try (ResultSet row = select.executeQuery()) {
        return row.next() ? Optional.of(new Order(row.getString(1), row.getString(2),
            row.getString(3), row.getInt(4), row.getLong(5))) : Optional.empty();
      }
    }
  }
}
