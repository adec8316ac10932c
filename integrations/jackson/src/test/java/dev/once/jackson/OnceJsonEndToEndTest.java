package dev.once.jackson;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

import dev.once.Codec;
import dev.once.IdempotencyKey;
import dev.once.InMemoryStore;
import dev.once.KeyReusedException;
import dev.once.Once;
import dev.once.Result;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class OnceJsonEndToEndTest {

  record Charge(String id, long amountCents, String currency) {}

  private final Once once = Once.builder(new InMemoryStore()).build();
  private final Codec<Charge> codec = JsonCodec.of(Charge.class);
  private final AtomicInteger runs = new AtomicInteger();

  private Result<Charge> charge(IdempotencyKey key, String body) {
    return once.call(key, CanonicalJson.fingerprint(body.getBytes(StandardCharsets.UTF_8)), codec,
        attempt -> new Charge("ch_" + runs.incrementAndGet(), 1250, "EUR"));
  }

  @Test
  void aRetryWithReorderedKeysReplaysAndADifferentBodyIsKeyReuse() {
    IdempotencyKey key = IdempotencyKey.of("payments.charge", "order-42");

    Result<Charge> first =
        charge(key, "{\"amount\":1250,\"currency\":\"EUR\",\"customer\":{\"id\":\"c1\"}}");
    Result<Charge> retry =
        charge(key, "{ \"customer\" : {\"id\":\"c1\"}, \"currency\":\"EUR\", \"amount\":1250.0 }");

    assertThat(first.replayed()).isFalse();
    assertThat(retry.replayed()).isTrue();
    assertThat(retry.value()).isEqualTo(first.value()).isEqualTo(new Charge("ch_1", 1250, "EUR"));
    assertThat(runs).hasValue(1);

    assertThatExceptionOfType(KeyReusedException.class)
        .isThrownBy(() -> charge(key, "{\"amount\":9999,\"currency\":\"EUR\",\"customer\":{\"id\":\"c1\"}}"))
        .satisfies(e -> assertThat(e.key()).isEqualTo(key));
    assertThat(runs).hasValue(1);
  }

  @Test
  void pointerFingerprintsIgnoreUnselectedFields() {
    IdempotencyKey key = IdempotencyKey.of("payments.charge", "order-43");
    String[] pointers = {"/amount", "/currency"};
    Result<Charge> first = once.call(key,
        CanonicalJson.fingerprint(bytes("{\"amount\":5,\"currency\":\"EUR\",\"sentAt\":\"t1\"}"), pointers),
        codec, attempt -> new Charge("ch_" + runs.incrementAndGet(), 5, "EUR"));
    Result<Charge> retry = once.call(key,
        CanonicalJson.fingerprint(bytes("{\"sentAt\":\"t2\",\"currency\":\"EUR\",\"amount\":5}"), pointers),
        codec, attempt -> new Charge("ch_" + runs.incrementAndGet(), 5, "EUR"));

    assertThat(retry.replayed()).isTrue();
    assertThat(retry.value()).isEqualTo(first.value());
    assertThat(runs).hasValue(1);
  }

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }
}
