package dev.once.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.Codecs;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.Maintenance;
import dev.once.Once;
import dev.once.Result;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The README's example, compiled and run. */
class RedisStoreExampleTest {

  @Test
  void readmeExample() {
    String uri = RedisServers.Standalone.SERVER.uri(); // e.g. "redis://127.0.0.1:6379"
    AtomicInteger charges = new AtomicInteger();

    // --- README example start
    try (RedisStore store = RedisStore.builder(uri)        // or "redis-cluster://h1:7000,h2:7001"
        .keyPrefix("payments:")                            // default "once:"
        .commandTimeout(Duration.ofSeconds(2))             // the default
        .durability(Durability.plain())                    // or Durability.replicas(1, Duration.ofMillis(50))
        .build()) {
      Once once = Once.builder(store)
          .lease(Duration.ofSeconds(30))
          .retention(Duration.ofHours(24))
          .build();

      IdempotencyKey key = IdempotencyKey.of("payments.charge", "acme", "order-42");
      Fingerprint request = Fingerprint.of("{\"amount\":1000}");
      Result<String> first = once.call(key, request, Codecs.utf8(),
          attempt -> "charge-" + charges.incrementAndGet());   // pass attempt.key() downstream
      Result<String> again = once.call(key, request, Codecs.utf8(),
          attempt -> "charge-" + charges.incrementAndGet());

      Maintenance.of(store).runOnce();                      // or schedule it: purge + reap
      // --- README example end

      assertThat(first.value()).isEqualTo("charge-1");
      assertThat(first.replayed()).isFalse();
      assertThat(again.value()).isEqualTo("charge-1");
      assertThat(again.replayed()).isTrue();
      assertThat(charges).hasValue(1);
    }
  }
}
