package dev.once.testkit;

import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.spi.ClaimRequest;
import dev.once.spi.IdempotencyStore;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;

/**
 * The one conformance suite every {@link IdempotencyStore} passes. Extend it, return a store over a
 * real server from {@link #newStore()}, and run it:
 *
 * <pre>{@code
 * class PostgresStoreConformanceTest extends StoreConformanceSuite {
 *   protected IdempotencyStore newStore() { return JdbcStore.builder(dataSource).build(); }
 * }
 * }</pre>
 *
 * Each test works in a scope of its own, so stores may share one database between tests. Time is
 * a {@link ManualClock}: nothing sleeps.
 *
 * <p>The tests are grouped by concern, one tester class each (package-private, beside this class,
 * on the shared {@code ConformanceTester}), and each tester runs here as a {@code @Nested} class,
 * so that this class stays the one entry point: a store extends it, implements the methods below,
 * and gets every group. A new test goes into the tester of its concern; a new concern is a new
 * tester and one {@code @Nested} class here.
 *
 * <ul>
 *   <li>state machine: {@code StateMachineTester}
 *   <li>fencing: {@code FencingTester}
 *   <li>fingerprint mismatch: {@code MismatchTester}
 *   <li>retention and maintenance: {@code RetentionTester}
 *   <li>checkpoints: {@code CheckpointsTester}
 *   <li>batch claim: {@code BatchTester}
 *   <li>batch completion: {@code BatchCompletionTester}
 *   <li>races between real threads: {@code RacesTester} (each race on platform and on virtual
 *       threads, {@link Racers}; the virtual-thread runs are skipped before JDK 21)
 *   <li>re-sent commands: {@code ResentTester}
 *   <li>a batch claim that fails part-way: {@code PartialBatchTester}
 *   <li>durable steps: {@code StepsTester}
 *   <li>through Once: {@code ThroughOnceTester}
 *   <li>coalesced store calls: {@code CoalescedTester}
 *   <li>the asynchronous path, {@code Once.callAsync}: {@code AsyncTester}
 * </ul>
 */
public abstract class StoreConformanceSuite {

  /** The lease every test claims with. */
  protected static final Duration LEASE = Duration.ofSeconds(30);
  /** The retention every test claims with. */
  protected static final Duration RETENTION = Duration.ofHours(24);
  /** Threads racing on one key in the race tests. */
  protected static final int RACERS = 16;

  /** The store under test, fresh from {@link #newStore()} for each test. */
  protected IdempotencyStore store;
  /** The test's clock; stores see time only through it. */
  protected ManualClock clock;
  /** The test's scope: every key it uses is in it. */
  String scope;
  private final AtomicInteger keys = new AtomicInteger();

  /** A store over the real server. Called before each test; closed after it. */
  protected abstract IdempotencyStore newStore();

  /**
   * Makes every claim of {@code key} fail inside the real store (a value of the wrong type at the
   * key, a trigger that raises for it, a broken shard), so that a batch claim fails part-way; true
   * if the store can. {@link #heal} undoes it. The partial-batch tests are skipped for a store that
   * cannot inject such a fault (the default).
   */
  protected boolean poison(IdempotencyKey key) {
    return false;
  }

  /** Undoes {@link #poison}: claims of {@code key} work again. */
  protected void heal(IdempotencyKey key) {}

  /**
   * A second client of the same records, as another process (or this one restarted) would open:
   * by default a new {@link #newStore()}. A store whose instances do not share records (in
   * memory) returns {@link #store}. Closed by the test.
   */
  protected IdempotencyStore anotherClient() {
    return newStore();
  }

  @BeforeEach
  void openStore() {
    store = newStore();
    // A start that differs per test, past anything earlier tests left, in a scope of its own.
    clock = new ManualClock(ManualClock.DEFAULT_START.plusSeconds(
        System.currentTimeMillis() / 1000 % 1_000_000));
    scope = "conformance." + UUID.randomUUID().toString().substring(0, 8);
  }

  @AfterEach
  void closeStore() {
    if (store != null) {
      store.close();
    }
  }

  /** A key no other test uses. */
  protected IdempotencyKey newKey() {
    return IdempotencyKey.of(scope, "key-" + keys.incrementAndGet());
  }

  /** A claim request at the clock's time with the suite's lease and retention. */
  protected ClaimRequest request(IdempotencyKey key, Fingerprint fingerprint) {
    return new ClaimRequest(key, fingerprint, clock.instant(), LEASE, RETENTION);
  }

  @Nested
  @DisplayName("state machine")
  class StateMachine extends StateMachineTester {
    StateMachine() {
      super(StoreConformanceSuite.this);
    }
  }

  @Nested
  @DisplayName("fencing")
  class Fencing extends FencingTester {
    Fencing() {
      super(StoreConformanceSuite.this);
    }
  }

  @Nested
  @DisplayName("fingerprint mismatch")
  class Mismatch extends MismatchTester {
    Mismatch() {
      super(StoreConformanceSuite.this);
    }
  }

  @Nested
  @DisplayName("retention and maintenance")
  class Retention extends RetentionTester {
    Retention() {
      super(StoreConformanceSuite.this);
    }
  }

  @Nested
  @DisplayName("checkpoints")
  class Checkpoints extends CheckpointsTester {
    Checkpoints() {
      super(StoreConformanceSuite.this);
    }
  }

  @Nested
  @DisplayName("batch claim")
  class Batch extends BatchTester {
    Batch() {
      super(StoreConformanceSuite.this);
    }
  }

  @Nested
  @DisplayName("batch completion")
  class BatchCompletion extends BatchCompletionTester {
    BatchCompletion() {
      super(StoreConformanceSuite.this);
    }
  }

  @Nested
  @DisplayName("races between real threads")
  class Races extends RacesTester {
    Races() {
      super(StoreConformanceSuite.this);
    }
  }

  @Nested
  @DisplayName("re-sent commands")
  class Resent extends ResentTester {
    Resent() {
      super(StoreConformanceSuite.this);
    }
  }

  @Nested
  @DisplayName("a batch claim that fails part-way")
  class PartialBatch extends PartialBatchTester {
    PartialBatch() {
      super(StoreConformanceSuite.this);
    }
  }

  @Nested
  @DisplayName("durable steps")
  class Steps extends StepsTester {
    Steps() {
      super(StoreConformanceSuite.this);
    }
  }

  @Nested
  @DisplayName("through Once")
  class ThroughOnce extends ThroughOnceTester {
    ThroughOnce() {
      super(StoreConformanceSuite.this);
    }
  }

  @Nested
  @DisplayName("coalesced store calls")
  class Coalesced extends CoalescedTester {
    Coalesced() {
      super(StoreConformanceSuite.this);
    }
  }

  @Nested
  @DisplayName("the asynchronous path")
  class Async extends AsyncTester {
    Async() {
      super(StoreConformanceSuite.this);
    }
  }
}
