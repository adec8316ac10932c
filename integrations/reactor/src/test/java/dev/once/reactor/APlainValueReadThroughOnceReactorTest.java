package dev.once.reactor;

import dev.once.Codecs;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.InMemoryStore;
import dev.once.Once;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;

/**
 * A key first answered by a blocking Once.call with the plain codec, then read through OnceReactor
 * with the same plain codec (the mistake outcomeCodec's decode names). Found by review: the tagged
 * codec judged by the first byte alone, so a plain "visa" replayed as "isa" and a plain "e" as an
 * empty result. Now such bytes are refused (IllegalArgumentException), never misread.
 */
class APlainValueReadThroughOnceReactorTest {

  final Once once = Once.builder(new InMemoryStore()).lease(Duration.ofSeconds(30)).build();
  final Fingerprint fp = Fingerprint.of("body");

  @Test
  void aPlainValueBeginningWithVIsNotReplayedThroughOnceReactorWithItsFirstLetterCutOff() {
    IdempotencyKey key = IdempotencyKey.of("cards.brand", UUID.randomUUID().toString());
    once.call(key, fp, Codecs.utf8(), attempt -> "visa");

    org.assertj.core.api.Assertions.assertThatThrownBy(() -> OnceReactor.of(once)
        .execute(key, fp, Codecs.utf8(), attempt -> Mono.just("never runs"))
        .block(Duration.ofSeconds(10)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("OnceReactor.outcomeCodec");
  }

  @Test
  void aPlainValueEIsNotReplayedThroughOnceReactorAsAnEmptyResult() {
    IdempotencyKey key = IdempotencyKey.of("grades.letter", UUID.randomUUID().toString());
    once.call(key, fp, Codecs.utf8(), attempt -> "e");

    org.assertj.core.api.Assertions.assertThatThrownBy(() -> OnceReactor.of(once)
        .execute(key, fp, Codecs.utf8(), attempt -> Mono.just("never runs"))
        .block(Duration.ofSeconds(10)))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
