package dev.once.spring.internal;

import dev.once.IdempotencyKey;
import dev.once.spi.IdempotencyStore;
import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;

/**
 * The store's health: one {@code find} of a probe key that is never claimed, a read of one row
 * (JDBC) or one hash (Redis). UP when it answers, DOWN with the error when it throws.
 */
public final class OnceHealthIndicator extends AbstractHealthIndicator {

  /** The key read by each check; its scope is never used by Once itself. */
  static final IdempotencyKey PROBE = IdempotencyKey.of("once.health", "probe");

  private final IdempotencyStore store;

  /** A health indicator reading from {@code store}. */
  public OnceHealthIndicator(IdempotencyStore store) {
    super("Idempotency store health check failed");
    this.store = store;
  }

  @Override
  protected void doHealthCheck(Health.Builder builder) {
    store.find(PROBE);
    builder.up().withDetail("store", store.getClass().getSimpleName());
  }
}
