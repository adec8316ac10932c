package dev.once.examples.payments;

import dev.once.spring.Idempotent;
import java.util.UUID;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/** Debits wallets, and refunds their charges. */
@Service
public class Wallets implements Payments {

  private final JdbcTemplate jdbc;

  public Wallets(JdbcTemplate jdbc) {
    this.jdbc = jdbc;
  }

  /**
   * Debits {@code request.amount()} from the wallet and records the charge, once per
   * {@code paymentKey}. The store is JDBC and the method is transactional, so Once joins the
   * transaction: the claim of the key, the debit, the charge row and the stored result commit
   * together or not at all. A second call with the same key returns the stored charge.
   */
  @Override
  @Idempotent(key = "#paymentKey", scope = "payments.charge",
      terminalOn = InsufficientFundsException.class)
  @Transactional(noRollbackFor = InsufficientFundsException.class)
  public Charge charge(String paymentKey, ChargeRequest request) {
    int debited = jdbc.update(
        "UPDATE wallet SET balance = balance - ? WHERE id = ? AND balance >= ?",
        request.amount(), request.wallet(), request.amount());
    if (debited == 0) {
      throw new InsufficientFundsException(request.wallet(), request.amount());
    }
    String id = "ch_" + UUID.randomUUID().toString().replace("-", "").substring(0, 16);
    jdbc.update("INSERT INTO charge (id, wallet_id, amount) VALUES (?, ?, ?)",
        id, request.wallet(), request.amount());
    long balance = jdbc.queryForObject("SELECT balance FROM wallet WHERE id = ?", Long.class,
        request.wallet());
    return new Charge(id, request.wallet(), request.amount(), balance);
  }

  /**
   * Credits the charge back to its wallet and records the refund, once per {@code refundKey} (the
   * saga's compensation key, stable across retries): the claim, the credit and the refund row
   * commit together, as for {@link #charge}. A charge is refunded at most once whatever the key
   * (the refund table's primary key).
   */
  @Override
  @Idempotent(key = "#refundKey", scope = "payments.refund")
  @Transactional
  public void refund(String refundKey, Charge charge) {
    jdbc.update("INSERT INTO refund (charge_id, amount) VALUES (?, ?)", charge.id(),
        charge.amount());
    jdbc.update("UPDATE wallet SET balance = balance + ? WHERE id = ?", charge.amount(),
        charge.wallet());
  }

  /** The wallet's balance in cents, or null if there is no such wallet. */
  public Long balance(String wallet) {
    return jdbc.query("SELECT balance FROM wallet WHERE id = ?",
        rs -> rs.next() ? rs.getLong(1) : null, wallet);
  }
}
