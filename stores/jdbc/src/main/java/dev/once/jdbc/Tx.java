package dev.once.jdbc;

import dev.once.IdempotencyKey;
import java.sql.Connection;

/** What the logic sees: the transaction {@link TransactionalOnce} runs it in. */
final class Tx implements Transaction {
  private final Connection connection;
  private final IdempotencyKey key;
  private final long token;
  private String downstreamKey;

  Tx(Connection connection, IdempotencyKey key, long token) {
    this.connection = connection;
    this.key = key;
    this.token = token;
  }

  @Override
  public Connection connection() {
    return connection;
  }

  @Override
  public IdempotencyKey idempotencyKey() {
    return key;
  }

  @Override
  public String key() {
    String k = downstreamKey;
    if (k == null) {
      k = key.downstreamKey();
      downstreamKey = k;
    }
    return k;
  }

  @Override
  public long token() {
    return token;
  }

  @Override
  public String toString() {
    return "Transaction[" + key + ", token " + token + "]";
  }
}
