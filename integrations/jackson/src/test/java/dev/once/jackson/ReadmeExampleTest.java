package dev.once.jackson;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.FailurePolicy;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.InMemoryStore;
import dev.once.Once;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The README's quick start, compiled and run, so the example cannot rot. */
class ReadmeExampleTest {

  record Charge(String id, long amountCents) {}

  record ChargeRequest(String idempotencyKey, byte[] body, long amountCents) {}

  static final class InsufficientFundsException extends RuntimeException {
    private static final long serialVersionUID = 1L;
  }

  /** A payment gateway that, like Stripe, deduplicates by the idempotency key it is given. */
  static final class Gateway {
    final Map<String, Charge> charges = new HashMap<>();

    Charge charge(ChargeRequest request, String idempotencyKey) {
      return charges.computeIfAbsent(idempotencyKey,
          k -> new Charge("ch_" + charges.size(), request.amountCents()));
    }
  }

  @Test
  void quickStart() {
    InMemoryStore store = new InMemoryStore();
    Gateway gateway = new Gateway();
    ChargeRequest request = new ChargeRequest("order-42",
        "{\"amount\":1000}".getBytes(StandardCharsets.UTF_8), 1000);

    Charge first = null;
    for (int delivery = 0; delivery < 3; delivery++) {
      // --- README quick start, verbatim ---
      Once once = Once.builder(store)                         // new InMemoryStore(), JDBC, Redis, …
          .lease(Duration.ofSeconds(30))                      // how long a claim is honoured
          .failurePolicy(FailurePolicy.retryAll().terminalOn(InsufficientFundsException.class))
          .build();

      Charge charge = once.execute(
          IdempotencyKey.of("payments.charge", request.idempotencyKey()),
          Fingerprint.of(request.body()),                     // same key + other body → KeyReusedException
          JsonCodec.of(Charge.class),                         // how the outcome is stored and replayed
          attempt -> gateway.charge(request, attempt.key())); // pass attempt.key() downstream
      // --- end ---
      if (first == null) {
        first = charge;
      }
      assertThat(charge).isEqualTo(first);
    }
    assertThat(gateway.charges).hasSize(1);
  }
}
