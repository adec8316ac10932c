package dev.once.redis;

import dev.once.spi.IdempotencyStore;
import dev.once.testkit.StepModelProperties;

/** Durable steps under dying and frozen workers, against a standalone Redis. */
class RedisStepModelProperties extends StepModelProperties {
  @Override
  protected IdempotencyStore newStore() {
    return RedisStore.builder(RedisServers.Standalone.CLIENT).build();
  }
}
