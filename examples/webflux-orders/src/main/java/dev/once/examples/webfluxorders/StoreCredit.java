package dev.once.examples.webfluxorders;

import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Component;

/** Store credit, in the store_credit table (blocking JDBC: call it off the event loop). */
@Component
public class StoreCredit {

  private final JdbcClient jdbc;

  public StoreCredit(JdbcClient jdbc) {
    this.jdbc = jdbc;
  }

  /** Takes up to {@code amount} from the customer's credit; returns how much it took. */
  public long take(String customer, long amount) {
    while (true) {
      long balance = balance(customer);
      long taken = Math.min(balance, amount);
      // Guarded by the balance read: two payments never take the same credit.
      if (taken == 0 || jdbc.sql("UPDATE store_credit SET balance = balance - ?"
              + " WHERE customer = ? AND balance = ?")
          .params(taken, customer, balance).update() == 1) {
        return taken;
      }
    }
  }

  /** The customer's credit in cents (0 without any). */
  public long balance(String customer) {
    return jdbc.sql("SELECT balance FROM store_credit WHERE customer = ?").param(customer)
        .query(Long.class).optional().orElse(0L);
  }

  /** Sets the customer's credit. */
  public void set(String customer, long balance) {
    jdbc.sql("INSERT INTO store_credit (customer, balance) VALUES (?, ?)"
            + " ON CONFLICT (customer) DO UPDATE SET balance = excluded.balance")
        .params(customer, balance).update();
  }
}
