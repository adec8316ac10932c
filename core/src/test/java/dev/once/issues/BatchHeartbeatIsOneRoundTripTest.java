package dev.once.issues;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.InMemoryStore;
import dev.once.ManualClock;
import dev.once.Once;
import dev.once.batch.BatchExecutor;
import dev.once.batch.ItemResult;
import dev.once.batch.ItemResult.Status;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * Issue 23, design risk 8: the batch heartbeat extended each held claim with a store call of its
 * own, so with Kafka's 500 records a poll and a slow store one beat could outlast the lease, and
 * even the running message's claim lapse. One beat is now one {@code extendAll}, and every claim
 * of the batch, those waiting their turn included, comes out of it with a full lease.
 */
class BatchHeartbeatIsOneRoundTripTest {

  private static final Duration LEASE = Duration.ofSeconds(30);

  record Msg(String key) {}

  @Test
  void oneBeatExtendsEveryClaimOfABatchWithOneStoreCall() {
    ManualClock clock = new ManualClock();
    TestParts.HandScheduler beats = new TestParts.HandScheduler();
    InMemoryStore memory = new InMemoryStore();
    List<String> calls = new CopyOnWriteArrayList<>();
    Once once = Once.builder(TestParts.hooked(memory, (method, args) -> calls.add(method)))
        .clock(clock).lease(LEASE).heartbeat(beats).build();
    List<Msg> batch = new ArrayList<>();
    for (int i = 0; i < 500; i++) {
      batch.add(new Msg("m" + i));
    }
    List<String> extendsDuringTheBeat = new ArrayList<>();
    BatchExecutor<Msg> executor = BatchExecutor.<Msg>builder(once, (m, a) -> {
      if (m.key().equals("m0")) {
        // The first handler is slow: two thirds of the lease pass, with beats.
        calls.clear();
        clock.advance(LEASE.dividedBy(3));
        beats.beat();
        clock.advance(LEASE.dividedBy(3));
        beats.beat();
        extendsDuringTheBeat.addAll(calls);
        // The last message of the batch, waiting its turn, has a full lease from the last beat.
        assertThat(memory.find(IdempotencyKey.of("orders", "m499")).orElseThrow().leaseUntil())
            .isEqualTo(clock.instant().plus(LEASE));
      }
    }).scope("orders").key(Msg::key).fingerprint(m -> Fingerprint.of(m.key())).build();

    List<ItemResult<Msg>> items = executor.process(batch).items();

    assertThat(items).extracting(ItemResult::status).containsOnly(Status.HANDLED);
    assertThat(extendsDuringTheBeat).containsExactly("extendAll", "extendAll");
  }
}
