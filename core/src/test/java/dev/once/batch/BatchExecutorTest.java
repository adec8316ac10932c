package dev.once.batch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.Attempt;
import dev.once.FailurePolicy;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.InMemoryStore;
import dev.once.ManualClock;
import dev.once.Once;
import dev.once.StoreUnavailableException;
import dev.once.batch.BatchExecutor;
import dev.once.batch.BatchOutcome;
import dev.once.batch.DeadLetter;
import dev.once.batch.ItemResult;
import dev.once.batch.ItemResult.Status;
import dev.once.batch.MessageHandler;
import dev.once.batch.NoKeyPolicy;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.IdempotencyStore;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The public batch engine ({@link BatchExecutor}) on the in-memory store: what each message comes
 * to, and the rules every broker adapter inherits from it. The adapters' own tests run the same
 * engine against real brokers and stores (Kafka, RabbitMQ, SQS, NATS).
 */
class BatchExecutorTest {

  private static final Duration LEASE = Duration.ofSeconds(30);
  private final ManualClock clock = new ManualClock();
  private final InMemoryStore memory = new InMemoryStore();
  /** Store methods that fail (once each) with a store outage, by name. */
  private final Set<String> failing = ConcurrentHashMap.newKeySet();
  private final List<String> storeCalls = new CopyOnWriteArrayList<>();
  private final IdempotencyStore store = faulty(memory);
  private final Once once = Once.builder(store).clock(clock).lease(LEASE)
      .failurePolicy(FailurePolicy.retryAll().terminalOn(IllegalArgumentException.class)).build();
  /** Runs of the handler, per message body. */
  private final Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
  private final List<DeadLetter<Msg>> deadLetters = new CopyOnWriteArrayList<>();

  /** A broker message: a key (null when it has none), an ordering group and a body. */
  record Msg(String key, String group, String body) {}

  private static final BatchConfig RETRIES = BatchConfig.builder()
      .retryBackoff(Duration.ofMillis(100), Duration.ofSeconds(1)).maxAttempts(3).build();

  private BatchExecutor.Builder<Msg> executor(MessageHandler<Msg> handler) {
    return BatchExecutor.builder(once, handler).scope("orders.ship").key(Msg::key)
        .fingerprint(m -> Fingerprint.of(m.body())).deadLetters(deadLetters::add)
        .config(RETRIES);
  }

  private MessageHandler<Msg> counting() {
    return (m, attempt) -> runs.computeIfAbsent(m.body(), b -> new AtomicInteger())
        .incrementAndGet();
  }

  private int runsOf(String body) {
    AtomicInteger n = runs.get(body);
    return n == null ? 0 : n.get();
  }

  private static List<Status> statuses(BatchOutcome<Msg> outcome) {
    return outcome.items().stream().map(ItemResult::status).toList();
  }

  @Test
  void oneClaimAllAndOneCompleteAllPerBatchAndDuplicatesReplay() {
    BatchExecutor<Msg> executor = executor(counting()).build();
    List<Msg> batch = List.of(new Msg("a", null, "A"), new Msg("b", null, "B"),
        new Msg("a", null, "A"));

    BatchOutcome<Msg> first = executor.process(batch);

    assertThat(statuses(first)).containsExactly(Status.HANDLED, Status.HANDLED, Status.REPLAYED);
    assertThat(first.isComplete()).isTrue();
    assertThat(storeCalls).containsExactly("claimAll", "completeAll");
    assertThat(runsOf("A")).isEqualTo(1);
    assertThat(first.items().get(0).key()).isEqualTo(IdempotencyKey.of("orders.ship", "a"));
    assertThat(first.items().get(0).attempt()).isEqualTo(1);

    BatchOutcome<Msg> redelivered = executor.process(batch);
    assertThat(statuses(redelivered)).containsOnly(Status.REPLAYED);
    assertThat(runsOf("A")).isEqualTo(1);
    assertThat(runsOf("B")).isEqualTo(1);
  }

  @Test
  void perMessageClaimsWhenBatchClaimsAreOff() {
    BatchExecutor<Msg> executor = executor(counting())
        .config(RETRIES.toBuilder().batchClaims(false).build()).build();

    BatchOutcome<Msg> outcome = executor.process(List.of(new Msg("a", null, "A"),
        new Msg("b", null, "B")));

    assertThat(statuses(outcome)).containsExactly(Status.HANDLED, Status.HANDLED);
    assertThat(storeCalls).containsExactly("claim", "complete", "claim", "complete");
  }

  @Test
  void aRetryableFailureBlocksTheRestOfItsGroupOnlyAndReleasesTheirClaims() {
    MessageHandler<Msg> handler = (m, attempt) -> {
      counting().handle(m, attempt);
      if (m.body().equals("P1")) {
        throw new IllegalStateException("downstream busy");
      }
    };
    BatchExecutor<Msg> executor = executor(handler).orderedBy(Msg::group).build();
    List<Msg> batch = List.of(new Msg("p1", "p", "P1"), new Msg("p2", "p", "P2"),
        new Msg("q1", "q", "Q1"));

    BatchOutcome<Msg> outcome = executor.process(batch);

    assertThat(statuses(outcome)).containsExactly(Status.RETRY, Status.NOT_RUN, Status.HANDLED);
    assertThat(runsOf("P2")).isZero();
    // Not before the message that blocked it.
    assertThat(outcome.items().get(1).retryAt()).isEqualTo(outcome.items().get(0).retryAt());
    ItemResult<Msg> retry = outcome.items().get(0);
    assertThat(retry.retryAt()).isEqualTo(clock.instant().plus(Duration.ofMillis(100)));
    assertThat(retry.failure()).hasMessage("downstream busy");
    assertThat(retry.attempt()).isEqualTo(1);
    assertThat(outcome.firstUnfinishedIndex()).isZero();
    assertThat(outcome.retryDelay(clock.instant())).isEqualTo(Duration.ofMillis(100));
    // Released, not left to its lease: the next delivery takes both over at once.
    IdempotencyKey p2 = IdempotencyKey.of("orders.ship", "p2");
    Claim again = memory.claim(new ClaimRequest(p2, Fingerprint.of("P2"), clock.instant(), LEASE,
        Duration.ofHours(1)));
    assertThat(again).isInstanceOf(Claim.Acquired.class);
  }

  @Test
  void retriesAreBoundedThenDeadLetteredOnceAndADuplicateReplaysWithoutASecondLetter() {
    BatchExecutor<Msg> executor = executor((m, attempt) -> {
      counting().handle(m, attempt);
      throw new IllegalStateException("always");
    }).build();
    List<Msg> batch = List.of(new Msg("a", null, "A"));

    assertThat(statuses(executor.process(batch))).containsExactly(Status.RETRY);
    assertThat(statuses(executor.process(batch))).containsExactly(Status.RETRY);
    BatchOutcome<Msg> third = executor.process(batch);

    assertThat(statuses(third)).containsExactly(Status.DEAD_LETTERED);
    assertThat(third.items().get(0).deadLetterReason())
        .isEqualTo(DeadLetter.Reason.RETRIES_EXHAUSTED);
    assertThat(runsOf("A")).isEqualTo(3);
    assertThat(deadLetters).singleElement().satisfies(letter -> {
      assertThat(letter.reason()).isEqualTo(DeadLetter.Reason.RETRIES_EXHAUSTED);
      assertThat(letter.attempts()).isEqualTo(3);
      assertThat(letter.key()).isEqualTo(IdempotencyKey.of("orders.ship", "a"));
      assertThat(letter.exceptionClass()).isEqualTo(IllegalStateException.class.getName());
    });
    assertThat(statuses(executor.process(batch))).containsExactly(Status.REPLAYED);
    assertThat(deadLetters).hasSize(1);
    assertThat(runsOf("A")).isEqualTo(3);
  }

  @Test
  void aTerminalFailureIsDeadLetteredBeforeItIsStoredAndRetriedWhenTheLetterCannotBe() {
    AtomicInteger publishes = new AtomicInteger();
    BatchExecutor<Msg> executor = executor((m, attempt) -> {
      counting().handle(m, attempt);
      throw new IllegalArgumentException("poison");
    }).deadLetters(letter -> {
      if (publishes.incrementAndGet() == 1) {
        throw new IllegalStateException("broker refused the dead letter");
      }
      deadLetters.add(letter);
    }).build();
    List<Msg> batch = List.of(new Msg("a", null, "A"));

    BatchOutcome<Msg> refused = executor.process(batch);
    assertThat(statuses(refused)).containsExactly(Status.RETRY);
    assertThat(deadLetters).isEmpty();

    BatchOutcome<Msg> second = executor.process(batch);
    assertThat(statuses(second)).containsExactly(Status.DEAD_LETTERED);
    assertThat(second.items().get(0).deadLetterReason())
        .isEqualTo(DeadLetter.Reason.TERMINAL_FAILURE);
    assertThat(deadLetters).singleElement()
        .satisfies(letter -> assertThat(letter.exceptionMessage()).isEqualTo("poison"));
    assertThat(statuses(executor.process(batch))).containsExactly(Status.REPLAYED);
    assertThat(runsOf("A")).isEqualTo(2);
  }

  @Test
  void keyReusedAndNoKeyAreDeadLetteredWithoutRunning() {
    BatchExecutor<Msg> executor = executor(counting()).build();
    executor.process(List.of(new Msg("a", null, "A")));

    BatchOutcome<Msg> outcome = executor.process(List.of(new Msg("a", null, "other body"),
        new Msg(null, null, "N")));

    assertThat(statuses(outcome)).containsExactly(Status.DEAD_LETTERED, Status.DEAD_LETTERED);
    assertThat(outcome.items()).extracting(ItemResult::deadLetterReason)
        .containsExactly(DeadLetter.Reason.KEY_REUSED, DeadLetter.Reason.NO_KEY);
    assertThat(runsOf("other body")).isZero();
    assertThat(runsOf("N")).isZero();
  }

  @Test
  void withoutAKeyAMessageCanBeProcessedUnprotected() {
    List<Attempt> attempts = new ArrayList<>();
    BatchExecutor<Msg> executor = executor((m, attempt) -> attempts.add(attempt))
        .config(RETRIES.toBuilder().noKeyPolicy(NoKeyPolicy.PROCESS_UNPROTECTED).build()).build();

    BatchOutcome<Msg> outcome = executor.process(List.of(new Msg(null, null, "N")));

    assertThat(statuses(outcome)).containsExactly(Status.HANDLED);
    assertThat(attempts).containsExactly((Attempt) null);
  }

  @Test
  void aKeyHeldElsewhereIsInProgressUntilTheHoldersLeaseEndsAtTheLatest() {
    IdempotencyKey key = IdempotencyKey.of("orders.ship", "a");
    memory.claim(new ClaimRequest(key, Fingerprint.of("A"), clock.instant(), Duration.ofMillis(400),
        Duration.ofHours(1)));
    BatchExecutor<Msg> executor = executor(counting()).build();

    BatchOutcome<Msg> outcome = executor.process(List.of(new Msg("a", null, "A")));

    assertThat(statuses(outcome)).containsExactly(Status.IN_PROGRESS);
    assertThat(outcome.items().get(0).retryAt()).isEqualTo(clock.instant().plusMillis(400));
    assertThat(runsOf("A")).isZero();
  }

  @Test
  void stoppingReleasesTheClaimsNotYetRun() {
    AtomicInteger asked = new AtomicInteger();
    BatchExecutor<Msg> executor = executor(counting()).build();

    BatchOutcome<Msg> outcome = executor.process(List.of(new Msg("a", null, "A"),
        new Msg("b", null, "B")), "orders.ship", () -> asked.incrementAndGet() > 1);

    assertThat(statuses(outcome)).containsExactly(Status.HANDLED, Status.NOT_RUN);
    assertThat(memory.claim(new ClaimRequest(IdempotencyKey.of("orders.ship", "b"),
        Fingerprint.of("B"), clock.instant(), LEASE, Duration.ofHours(1))))
        .isInstanceOf(Claim.Acquired.class);
  }

  @Test
  void anOutcomeTheStoreDidNotTakeIsKeptAndStoredBeforeTheMessageRunsAgain() {
    BatchExecutor<Msg> executor = executor(counting()).build();
    List<Msg> batch = List.of(new Msg("a", null, "A"));
    failing.add("completeAll");

    BatchOutcome<Msg> first = executor.process(batch);

    assertThat(statuses(first)).containsExactly(Status.OUTCOME_PENDING);
    assertThat(first.items().get(0).failure()).isInstanceOf(StoreUnavailableException.class);
    assertThat(runsOf("A")).isEqualTo(1);

    // The store is back: the kept outcome is stored first, so the redelivery is a replay.
    BatchOutcome<Msg> redelivered = executor.process(batch);
    assertThat(statuses(redelivered)).containsExactly(Status.REPLAYED);
    assertThat(runsOf("A")).isEqualTo(1);
  }

  @Test
  void aClaimThatTheStoreRefusedRunsNothing() {
    BatchExecutor<Msg> executor = executor(counting()).build();
    failing.add("claimAll");

    BatchOutcome<Msg> outcome = executor.process(List.of(new Msg("a", null, "A"),
        new Msg("b", null, "B")));

    assertThat(statuses(outcome)).containsOnly(Status.NOT_RUN);
    assertThat(runs).isEmpty();
    assertThat(statuses(executor.process(List.of(new Msg("a", null, "A")))))
        .containsExactly(Status.HANDLED);
  }

  @Test
  void aMessageWaitingItsTurnWhoseClaimWasTakenOverDoesNotRun() {
    // The first handler is slow: the clock passes the lease, and another worker takes the second
    // key over. The second message must not run here (its lease is checked before it runs).
    IdempotencyKey b = IdempotencyKey.of("orders.ship", "b");
    BatchExecutor<Msg> executor = executor((m, attempt) -> {
      counting().handle(m, attempt);
      if (m.body().equals("A")) {
        clock.advance(LEASE.plusSeconds(1));
        assertThat(memory.claim(new ClaimRequest(b, Fingerprint.of("B"), clock.instant(), LEASE,
            Duration.ofHours(1)))).isInstanceOf(Claim.Acquired.class);
      }
    }).build();

    BatchOutcome<Msg> outcome = executor.process(List.of(new Msg("a", null, "A"),
        new Msg("b", null, "B")));

    // A's lease passed too, but no one took it over: its completion under its token stands.
    assertThat(statuses(outcome)).containsExactly(Status.HANDLED, Status.LEASE_LOST);
    assertThat(runsOf("B")).isZero();
  }

  @Test
  void theBuilderRefusesBadSettings() {
    assertThatThrownBy(() -> BatchExecutor.builder(once, counting()).build())
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("key derivation");
    assertThatThrownBy(() -> BatchConfig.builder().maxAttempts(0))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxAttempts");
    assertThatThrownBy(() -> BatchConfig.builder()
        .retryBackoff(Duration.ofSeconds(2), Duration.ofSeconds(1)))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> BatchConfig.builder().inProgressBackoff(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("inProgressBackoff");
    assertThatThrownBy(() -> BatchExecutor.builder(once, counting()).config(null))
        .isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> BatchExecutor.builder(once, counting()).scope("bad scope/"))
        .isInstanceOf(RuntimeException.class);
    assertThatThrownBy(() -> BatchExecutor.builder(once, counting()).key(Msg::key).build()
        .process(List.of())).isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("no scope");
  }

  /** The store, with each call recorded and the methods named in {@link #failing} failing once. */
  private IdempotencyStore faulty(IdempotencyStore delegate) {
    return (IdempotencyStore) Proxy.newProxyInstance(IdempotencyStore.class.getClassLoader(),
        new Class<?>[] {IdempotencyStore.class}, (proxy, method, args) -> {
          String name = method.getName();
          if (!name.equals("maxPayloadBytes") && !name.equals("defaultCoalescing")
              && !name.equals("toString")) {
            storeCalls.add(name);
          }
          if (failing.remove(name)) {
            throw new StoreUnavailableException(name + " failed: connection reset", null, false);
          }
          try {
            return method.invoke(delegate, args);
          } catch (InvocationTargetException e) {
            throw e.getCause();
          }
        });
  }
}
