package dev.once.issues;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.InMemoryStore;
import dev.once.Once;
import dev.once.batch.BatchExecutor;
import dev.once.batch.ItemResult.Status;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * Found in review of issue 23: a step journal this version cannot read (written by a newer
 * version during a rolling deploy, or torn) for one key ended the whole batch, leaving the other
 * claims held; in Kafka the consumer died on every redelivery. Now it fails its own message only:
 * given back unrun, for a worker that can read it.
 */
class UnreadableJournalTest {

  record Msg(String key) {}

  @Test
  void anUnreadableJournalFailsItsOwnMessageOnly() {
    InMemoryStore store = new InMemoryStore();
    Once once = Once.builder(store).build();
    IdempotencyKey a = IdempotencyKey.of("s", "A");
    java.time.Instant now = java.time.Instant.now();
    var acquired = (dev.once.spi.Claim.Acquired) store.claim(new dev.once.spi.ClaimRequest(a,
        Fingerprint.of("A"), now, java.time.Duration.ofSeconds(30), java.time.Duration.ofDays(1)));
    store.checkpoint(a, acquired.token(),
        dev.once.Checkpoint.of("once:journal", new byte[] {3, 0, 0, 0, 0, 0, 0}), now);
    store.fail(a, acquired.token(), "x", now, java.time.Duration.ofDays(1));
    List<String> handled = new CopyOnWriteArrayList<>();
    BatchExecutor<Msg> executor = BatchExecutor.<Msg>builder(once, (m, at) -> handled.add(m.key()))
        .scope("s").key(Msg::key).fingerprint(m -> Fingerprint.of(m.key()))
        .deadLetters(l -> {}).build();

    var outcome = executor.process(List.of(new Msg("A"), new Msg("B")));

    assertThat(outcome.items()).extracting(i -> i.status())
        .containsExactly(Status.NOT_RUN, Status.HANDLED);
    assertThat(handled).containsExactly("B");
    var a2 = store.find(a).orElseThrow();
    assertThat(a2.status()).as("given back for a worker that can read it")
        .isEqualTo(dev.once.spi.Status.FAILED);
    assertThat(a2.attempts()).as("not counted: its work never ran").isEqualTo(1);
  }
}
