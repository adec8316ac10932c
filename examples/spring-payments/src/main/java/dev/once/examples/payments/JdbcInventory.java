package dev.once.examples.payments;

import java.util.List;
import java.util.UUID;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Repository;
import org.springframework.transaction.annotation.Transactional;

/** The warehouse's stock in PostgreSQL: each reservation a row, keyed by its reference. */
@Repository
public class JdbcInventory implements Inventory {

  private final JdbcTemplate jdbc;

  public JdbcInventory(JdbcTemplate jdbc) {
    this.jdbc = jdbc;
  }

  @Override
  @Transactional
  public String reserve(String sku, int quantity, String reference) {
    List<String> existing = jdbc.queryForList(
        "SELECT id FROM reservation WHERE reference = ?", String.class, reference);
    if (!existing.isEmpty()) {
      return existing.get(0); // this reference reserved already
    }
    int taken = jdbc.update(
        "UPDATE stock SET available = available - ? WHERE sku = ? AND available >= ?",
        quantity, sku, quantity);
    if (taken == 0) {
      throw new OutOfStockException(sku, quantity);
    }
    String id = "rsv_" + UUID.randomUUID().toString().replace("-", "").substring(0, 16);
    jdbc.update("INSERT INTO reservation (id, reference, sku, quantity) VALUES (?, ?, ?, ?)",
        id, reference, sku, quantity);
    return id;
  }

  @Override
  @Transactional
  public void release(String reservation) {
    jdbc.query("UPDATE reservation SET released = true WHERE id = ? AND NOT released"
            + " RETURNING sku, quantity",
        rs -> {
          jdbc.update("UPDATE stock SET available = available + ? WHERE sku = ?",
              rs.getInt("quantity"), rs.getString("sku"));
        }, reservation);
  }

  /** The units of {@code sku} available, or null if there is no such product. */
  public Integer available(String sku) {
    return jdbc.query("SELECT available FROM stock WHERE sku = ?",
        rs -> rs.next() ? rs.getInt(1) : null, sku);
  }
}
