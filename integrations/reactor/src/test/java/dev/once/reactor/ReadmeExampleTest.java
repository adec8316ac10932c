package dev.once.reactor;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.Codecs;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.InMemoryStore;
import dev.once.Once;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/** The README's example, compiled and run; the README shows this very code. */
class ReadmeExampleTest {

  record Charge(String id, long amount) {}

  /** Stands for a reactive payment gateway that dedupes on the key it is given. */
  static final class Gateway {
    final AtomicInteger charges = new AtomicInteger();

    Mono<String> charge(long amount, String key) {
      return Mono.fromCallable(() -> "ch_" + charges.incrementAndGet())
          .subscribeOn(Schedulers.parallel());
    }
  }

  // --8<-- [start:example]
  static Mono<String> charge(OnceReactor onceReactor, Gateway gateway, String requestKey,
      long amount) {
    return onceReactor.execute(
        IdempotencyKey.of("payments.charge", requestKey),    // the client's idempotency key
        Fingerprint.of(Long.toString(amount)),               // same key, other request: refused
        Codecs.utf8(),                                       // how the outcome is stored
        attempt -> gateway.charge(amount, attempt.key()));   // subscribed once the key is claimed
  }
  // --8<-- [end:example]

  @Test
  void theExampleChargesOnceAndReplaysTheChargeToDuplicates() {
    Gateway gateway = new Gateway();
    OnceReactor onceReactor = OnceReactor.of(Once.builder(new InMemoryStore()).build());

    List<String> answers = Mono.just("order-42")
        .flatMap(key -> charge(onceReactor, gateway, key, 1250))
        .repeat(2)
        .collectList()
        .block(java.time.Duration.ofSeconds(30));

    assertThat(answers).containsExactly("ch_1", "ch_1", "ch_1");
    assertThat(gateway.charges).hasValue(1);
  }

  @Test
  void theReadmeShowsTheExample() throws IOException {
    String source = Files.readString(
        Path.of("src/test/java/dev/once/reactor/ReadmeExampleTest.java"));
    String example = source.substring(source.indexOf('\n', source.indexOf("[start:example]")) + 1,
        source.lastIndexOf("\n", source.indexOf("// --8<-- [end:example]")));
    assertThat(stripped(Files.readString(Path.of("README.md"))))
        .contains(stripped(example));
  }

  private static String stripped(String text) {
    return text.lines().map(String::strip).filter(l -> !l.isEmpty())
        .collect(Collectors.joining("\n"));
  }
}
