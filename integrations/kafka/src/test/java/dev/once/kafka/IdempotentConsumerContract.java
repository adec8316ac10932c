package dev.once.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.Attempt;
import dev.once.FailurePolicy;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.Once;
import dev.once.OnceListener;
import dev.once.batch.BatchConfig;
import dev.once.batch.DeadLetterPublisher;
import dev.once.batch.MessageHandler;
import dev.once.batch.NoKeyPolicy;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.IdempotencyStore;
import dev.once.spi.Outcome;
import dev.once.spi.Status;
import dev.once.testkit.Await;
import dev.once.testkit.Effects;
import dev.once.testkit.ManualClock;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.IntStream;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The idempotent consumer against a real broker, for one store. A store joins by subclassing and
 * naming its store and where the handlers' side effects are recorded.
 */
abstract class IdempotentConsumerContract {

  static final Duration LEASE = Duration.ofSeconds(30);

  /** The store under test, shared by the tests of the class (each test has its own scope). */
  protected abstract IdempotencyStore store();

  /** A fresh, empty record of side effects. */
  protected abstract Effects newEffects();

  /** A real outage of the store under test, begun and ended by the test. */
  protected abstract StoreOutage outage();

  /** A fault of the store that makes its calls fail until it ends. */
  interface StoreOutage {
    /** The store to build a {@code Once} on: the store under test, as the outage reaches it. */
    IdempotencyStore store();

    /** From now on the store's calls fail. */
    void begin();

    /** The store works again, with what it held before the outage. */
    void end();
  }

  private Effects effects;
  private ExecutorService threads;
  private final List<IdempotentConsumerLoop<String, String>> loops = new ArrayList<>();
  private final AtomicInteger deadLettersPublished = new AtomicInteger();

  @BeforeEach
  void setUp() {
    effects = newEffects();
    threads = Executors.newCachedThreadPool();
  }

  @AfterEach
  void tearDown() throws InterruptedException {
    loops.forEach(IdempotentConsumerLoop::close);
    threads.shutdownNow();
    threads.awaitTermination(10, TimeUnit.SECONDS);
  }

  // ---------------------------------------------------------------------------------------------

  @Test
  void producerDuplicatesHaveOneEffect() {
    String topic = Broker.topic(Broker.unique("dups"), 2);
    String group = Broker.unique("group");
    for (int i = 0; i < 20; i++) {
      // Each event twice in a row (a producer retry): usually in the same poll batch.
      Broker.send(topic, i % 2, "k" + i, "e" + i);
      Broker.send(topic, i % 2, "k" + i, "e" + i);
    }
    start(consumer(once(Clock.systemUTC()), this::effect).build(), group, topic);
    Await.until("20 events handled", () -> effects.counts().size() == 20, () -> effects.counts().toString());

    // The same events again, in later batches.
    for (int i = 0; i < 5; i++) {
      Broker.send(topic, i % 2, "k" + i, "e" + i);
    }
    Await.until("everything committed",
        () -> Map.of(0, 23L, 1, 22L).equals(Broker.committed(group)),
        () -> Broker.committed(group).toString());
    assertThat(effects.counts()).hasSize(20).allSatisfy((event, n) -> assertThat(n).isOne());
  }

  @Test
  void consumerKilledMidBatchHandsOverWithoutRepeatingOrLosingEffects() throws Exception {
    String topic = Broker.topic(Broker.unique("crash"), 2);
    String group = Broker.unique("group");
    for (int i = 0; i < 40; i++) {
      Broker.send(topic, i % 2, "k" + i, "e" + i);
    }
    ManualClock clock = new ManualClock(Instant.now());
    AtomicBoolean crashed = new AtomicBoolean();
    // e20 is the 11th record of partition 0: ten effects of that batch are done, none committed.
    IdempotentConsumer<String, String> consumer = consumer(once(clock), (record, attempt) -> {
      if (record.value().equals("e20") && crashed.compareAndSet(false, true)) {
        throw new SimulatedCrash();
      }
      effect(record, attempt);
    }).build();
    Future<?> first = start(consumer, group, topic);
    Future<?> second = start(consumer, group, topic);

    Await.until("a consumer to die", () -> first.isDone() || second.isDone());
    Future<?> dead = first.isDone() ? first : second;
    assertThat(catchCause(dead)).isInstanceOf(SimulatedCrash.class);
    // The dead consumer's claim on e20 is IN_PROGRESS: the survivor waits for its lease to pass.
    clock.advance(LEASE.plusSeconds(1));

    Await.until("40 events handled", () -> effects.counts().size() == 40, () -> effects.counts().toString());
    Await.until("everything committed",
        () -> Map.of(0, 20L, 1, 20L).equals(Broker.committed(group)),
        () -> Broker.committed(group).toString());
    assertThat(effects.counts()).hasSize(40).allSatisfy((event, n) -> assertThat(n).isOne());
  }

  @Test
  void consumerClosedMidBatchReleasesTheRestAndAnotherConsumerFinishes() throws Exception {
    String topic = Broker.topic(Broker.unique("close"), 1);
    String group = Broker.unique("group");
    for (int i = 0; i < 30; i++) {
      Broker.send(topic, 0, "k" + i, "e" + i);
    }
    CountDownLatch reached = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    IdempotentConsumer<String, String> consumer =
        consumer(once(Clock.systemUTC()), (record, attempt) -> {
          effect(record, attempt);
          if (record.value().equals("e10") && reached.getCount() > 0) {
            reached.countDown();
            release.await();
          }
        }).build();
    IdempotentConsumerLoop<String, String> loop = consumer.loop(Broker.consumer(group),
        List.of(topic));
    loops.add(loop);
    Future<?> first = threads.submit(loop);

    assertThat(reached.await(30, TimeUnit.SECONDS)).isTrue();
    loop.stop(); // mid-batch: e10 is being handled, e11..e29 are claimed
    release.countDown();
    first.get(30, TimeUnit.SECONDS);

    assertThat(Broker.committed(group)).isEqualTo(Map.of(0, 11L));
    IdempotencyRecord next = store().find(IdempotencyKey.of(group, "k11")).orElseThrow();
    assertThat(next.status()).as("released for the next owner").isEqualTo(Status.FAILED);
    assertThat(effects.counts()).hasSize(11);

    start(consumer, group, topic);
    Await.until("30 events handled", () -> effects.counts().size() == 30, () -> effects.counts().toString());
    Await.until("everything committed", () -> Map.of(0, 30L).equals(Broker.committed(group)));
    assertThat(effects.counts()).allSatisfy((event, n) -> assertThat(n).isOne());
  }

  @Test
  void poisonRecordsAreDeadLetteredAndThePartitionKeepsFlowing() {
    String topic = Broker.topic(Broker.unique("poison"), 1);
    String group = Broker.unique("group");
    Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
    Once once = Once.builder(store())
        .failurePolicy(FailurePolicy.retryAll().terminalOn(PoisonException.class)).build();
    IdempotentConsumer<String, String> consumer = consumer(once, (record, attempt) -> {
      runs.computeIfAbsent(record.value(), v -> new AtomicInteger()).incrementAndGet();
      if (record.value().startsWith("poison-terminal")) {
        throw new PoisonException("cannot parse " + record.value());
      }
      if (record.value().startsWith("poison-retry")) {
        throw new IllegalStateException("downstream keeps failing");
      }
      effect(record, attempt);
    }).config(retries().maxAttempts(3).build()).build();
    List<String> values = List.of("e0", "e1", "e2", "poison-terminal-3", "e4", "e5",
        "poison-retry-6", "e7", "e8", "e9");
    for (int i = 0; i < values.size(); i++) {
      Broker.send(topic, 0, "k" + i, values.get(i));
    }
    start(consumer, group, topic);

    Await.until("everything committed", () -> Map.of(0, 10L).equals(Broker.committed(group)),
        () -> Broker.committed(group) + " " + effects.counts());
    assertThat(effects.counts()).containsOnlyKeys("e0", "e1", "e2", "e4", "e5", "e7", "e8", "e9");
    assertThat(runs.get("poison-terminal-3")).hasValue(1);
    assertThat(runs.get("poison-retry-6")).hasValue(3);

    List<ConsumerRecord<String, String>> dead = Broker.readAll(topic + "-dlt", 2);
    assertThat(dead).extracting(ConsumerRecord::value)
        .containsExactly("poison-terminal-3", "poison-retry-6");
    ConsumerRecord<String, String> terminal = dead.get(0);
    assertThat(Broker.header(terminal, DeadLetterHeaders.ORIGINAL_TOPIC)).isEqualTo(topic);
    assertThat(Broker.header(terminal, DeadLetterHeaders.ORIGINAL_PARTITION)).isEqualTo("0");
    assertThat(Broker.header(terminal, DeadLetterHeaders.ORIGINAL_OFFSET)).isEqualTo("3");
    assertThat(Broker.header(terminal, DeadLetterHeaders.IDEMPOTENCY_KEY)).isEqualTo("k3");
    assertThat(Broker.header(terminal, DeadLetterHeaders.REASON)).isEqualTo("TERMINAL_FAILURE");
    assertThat(Broker.header(terminal, DeadLetterHeaders.EXCEPTION_CLASS))
        .isEqualTo(PoisonException.class.getName());
    assertThat(Broker.header(terminal, DeadLetterHeaders.EXCEPTION_MESSAGE))
        .isEqualTo("cannot parse poison-terminal-3");
    assertThat(Broker.header(terminal, KeyDerivation.DEFAULT_HEADER)).isEqualTo("k3");
    assertThat(terminal.key()).isEqualTo("poison-terminal-3");
    ConsumerRecord<String, String> exhausted = dead.get(1);
    assertThat(Broker.header(exhausted, DeadLetterHeaders.REASON)).isEqualTo("RETRIES_EXHAUSTED");
    assertThat(Broker.header(exhausted, DeadLetterHeaders.ATTEMPTS)).isEqualTo("3");
    assertThat(Broker.header(exhausted, DeadLetterHeaders.ORIGINAL_OFFSET)).isEqualTo("6");

    // Both failures are stored: a redelivery is skipped, not run or dead-lettered again.
    IdempotencyRecord stored = store().find(IdempotencyKey.of(group, "k3")).orElseThrow();
    assertThat(stored.status()).isEqualTo(Status.COMPLETED);
    assertThat(stored.outcome().kind()).isEqualTo(Outcome.Kind.FAILURE);
    assertThat(stored.outcome().failureType()).isEqualTo(PoisonException.class.getName());
    Broker.send(topic, 0, "k3", "poison-terminal-3");
    Broker.send(topic, 0, "k6", "poison-retry-6");
    Await.until("the redeliveries committed",
        () -> Map.of(0, 12L).equals(Broker.committed(group)));
    assertThat(runs.get("poison-terminal-3")).hasValue(1);
    assertThat(runs.get("poison-retry-6")).hasValue(3);
    assertThat(deadLettersPublished).hasValue(2);
  }

  @Test
  void stepsRunOnceAcrossRetriesAndATerminalFailureCompensatesThemOnce() {
    String topic = Broker.topic(Broker.unique("saga"), 1);
    String group = Broker.unique("group");
    Map<String, AtomicInteger> calls = new ConcurrentHashMap<>();
    Once once = Once.builder(store())
        .failurePolicy(FailurePolicy.retryAll().terminalOn(PoisonException.class)).build();
    IdempotentConsumer<String, String> consumer = consumer(once, (record, attempt) -> {
      String v = record.value();
      attempt.step(dev.once.Step.of("reserve", dev.once.Codecs.utf8())
              .compensate((r, k) -> count(calls, "release " + v)),
          k -> "reserved " + count(calls, "reserve " + v));
      attempt.step(dev.once.Step.of("charge", dev.once.Codecs.utf8())
          .compensate((r, k) -> count(calls, "refund " + v)), k -> {
            if (count(calls, "charge " + v) == 1 && v.equals("flaky")) {
              throw new IllegalStateException("gateway timeout"); // retryable
            }
            return "charged";
          });
      if (v.equals("declined")) {
        throw new PoisonException("card declined after the charge");
      }
      effect(record, attempt);
    }).config(retries().maxAttempts(3).build()).build();
    Broker.send(topic, 0, "k-flaky", "flaky");
    Broker.send(topic, 0, "k-declined", "declined");
    start(consumer, group, topic);

    Await.until("both committed", () -> Map.of(0, 2L).equals(Broker.committed(group)),
        () -> Broker.committed(group) + " " + calls);
    // The retried record did not reserve twice; the declined one was undone, each undo once.
    assertThat(calls).containsOnlyKeys("reserve flaky", "charge flaky", "reserve declined",
        "charge declined", "refund declined", "release declined");
    assertThat(calls.get("reserve flaky")).hasValue(1);
    assertThat(calls.get("charge flaky")).hasValue(2);
    assertThat(calls.get("refund declined")).hasValue(1);
    assertThat(calls.get("release declined")).hasValue(1);
    IdempotencyRecord declined = store().find(IdempotencyKey.of(group, "k-declined"))
        .orElseThrow();
    assertThat(declined.outcome().failureMessage())
        .isEqualTo("card declined after the charge (compensated: charge, reserve)");
    assertThat(effects.counts()).containsOnlyKeys("flaky");
  }

  private static int count(Map<String, AtomicInteger> calls, String what) {
    return calls.computeIfAbsent(what, w -> new AtomicInteger()).incrementAndGet();
  }

  @Test
  void orderWithinEachPartitionIsKeptThroughRetries() {
    String topic = Broker.topic(Broker.unique("order"), 3);
    String group = Broker.unique("group");
    AtomicInteger failures = new AtomicInteger();
    IdempotentConsumer<String, String> consumer =
        consumer(once(Clock.systemUTC()), (record, attempt) -> {
          if (record.value().equals("e7") && failures.incrementAndGet() <= 2) {
            throw new IllegalStateException("transient");
          }
          effect(record, attempt);
        }).build();
    for (int i = 0; i < 60; i++) {
      Broker.send(topic, i % 3, "k" + i, "e" + i);
    }
    start(consumer, group, topic);

    Await.until("60 events handled", () -> effects.counts().size() == 60, () -> effects.counts().toString());
    for (int p = 0; p < 3; p++) {
      int partition = p;
      List<String> produced = IntStream.range(0, 60).filter(i -> i % 3 == partition)
          .mapToObj(i -> "e" + i).toList();
      assertThat(effects.sequence(String.valueOf(partition))).as("partition %d", p)
          .isEqualTo(produced);
    }
    assertThat(failures).hasValue(3);
  }

  @Test
  void recordInProgressElsewhereIsWaitedForWithoutCommittingPastIt() {
    String topic = Broker.topic(Broker.unique("inprogress"), 1);
    String group = Broker.unique("group");
    AtomicInteger inProgressAnswers = new AtomicInteger();
    Once once = Once.builder(store()).listener(new OnceListener() {
      @Override
      public void onInProgress(IdempotencyKey key) {
        inProgressAnswers.incrementAndGet();
      }
    }).build();
    // Another consumer (e.g. the previous owner of the partition, still running) holds k1.
    IdempotencyKey k1 = IdempotencyKey.of(group, "k1");
    Instant now = Instant.now();
    Claim.Acquired holder = (Claim.Acquired) store().claim(
        new ClaimRequest(k1, Fingerprint.of("e1"), now, LEASE, Duration.ofHours(1)));
    Broker.send(topic, 0, "k0", "e0");
    Broker.send(topic, 0, "k1", "e1");
    Broker.send(topic, 0, "k2", "e2");
    start(consumer(once, this::effect).build(), group, topic);

    Await.until("e0 handled and k1 found in progress twice",
        () -> effects.count("e0") == 1 && inProgressAnswers.get() >= 2);
    Await.until("e0 committed", () -> Map.of(0, 1L).equals(Broker.committed(group)));
    assertThat(effects.counts()).as("nothing past the record in progress").containsOnlyKeys("e0");

    // The other consumer finishes: k1 is now a duplicate, skipped; e2 flows.
    store().complete(k1, holder.token(), Outcome.success("text/plain", new byte[0]),
        Instant.now(), Duration.ofHours(1));
    Await.until("everything committed", () -> Map.of(0, 3L).equals(Broker.committed(group)));
    assertThat(effects.counts()).isEqualTo(Map.of("e0", 1, "e2", 1));
    assertThat(Broker.committed(group)).isEqualTo(Map.of(0, 3L));
  }

  @Test
  void aCompletionLostToATakeoverIsNotCommittedPastAndNothingRepeats() {
    String topic = Broker.topic(Broker.unique("lost"), 1);
    String group = Broker.unique("group");
    for (int i = 0; i < 5; i++) {
      Broker.send(topic, 0, "k" + i, "e" + i);
    }
    ManualClock clock = new ManualClock(Instant.now());
    IdempotencyKey k2 = IdempotencyKey.of(group, "k2");
    AtomicReference<Claim.Acquired> successor = new AtomicReference<>();
    List<IdempotencyKey> leasesLost = new java.util.concurrent.CopyOnWriteArrayList<>();
    Once once = Once.builder(store()).clock(clock).lease(LEASE).listener(new OnceListener() {
      @Override
      public void onLeaseLost(IdempotencyKey key, long token) {
        leasesLost.add(key);
      }
    }).build();
    IdempotentConsumer<String, String> consumer = consumer(once, (record, attempt) -> {
      effect(record, attempt);
      if (record.value().equals("e2") && successor.get() == null) {
        // The handler outlives its lease and another worker takes k2 over before the batch's
        // outcomes are stored: k2's completion is refused, the others of the batch are stored.
        clock.advance(LEASE.plusSeconds(1));
        successor.set((Claim.Acquired) store().claim(new ClaimRequest(k2,
            Fingerprint.of("e2"), clock.instant(), LEASE, Duration.ofHours(1))));
      }
    }).fingerprint(r -> Fingerprint.of(r.value())).build();
    start(consumer, group, topic);

    Await.until("e0..e4 handled and k2's lease found lost",
        () -> effects.counts().size() == 5 && leasesLost.contains(k2),
        () -> effects.counts() + " " + leasesLost);
    Await.until("the prefix before k2 committed", () -> Map.of(0, 2L).equals(Broker.committed(group)),
        () -> Broker.committed(group).toString());
    assertThat(store().find(IdempotencyKey.of(group, "k3")).orElseThrow().status())
        .as("a later record of the batch was stored all the same").isEqualTo(Status.COMPLETED);

    // The successor finishes k2: its redelivery, and e3 and e4 after it, are replays.
    store().complete(k2, successor.get().token(), Outcome.success("text/plain", new byte[0]),
        clock.instant(), Duration.ofHours(1));
    clock.advance(Duration.ofSeconds(1)); // past the partition's pause (the loop's clock)
    Await.until("everything committed", () -> Map.of(0, 5L).equals(Broker.committed(group)),
        () -> Broker.committed(group).toString());
    assertThat(effects.counts()).hasSize(5).allSatisfy((event, n) -> assertThat(n).isOne());
  }

  @Test
  void aSlowBatchKeepsTheLeasesOfItsWaitingRecordsAliveWithOneHeartbeat() {
    String topic = Broker.topic(Broker.unique("slow"), 1);
    String group = Broker.unique("group");
    for (int i = 0; i < 5; i++) {
      Broker.send(topic, 0, "k" + i, "e" + i);
    }
    List<ConsumerRecord<String, String>> sent = Broker.readAll(topic, 5);
    ManualClock clock = new ManualClock(Instant.now());
    ManualScheduler beats = new ManualScheduler();
    Once once = Once.builder(store()).clock(clock).lease(LEASE).heartbeat(beats).build();
    // Another consumer of the group over the same store and clock (e.g. one the partition was
    // handed to while this one is still busy), running the same effect.
    IdempotentConsumer<String, String> rival = consumer(once(clock), this::effect).build();
    List<BatchResult> rivalResults = new CopyOnWriteArrayList<>();
    IdempotentConsumer<String, String> slow = consumer(once, (record, attempt) -> {
      effect(record, attempt);
      // Each handler outlasts the lease; meanwhile the heartbeat beats every third of it, as it
      // would in real time.
      for (int third = 0; third < 4; third++) {
        clock.advance(LEASE.dividedBy(3));
        beats.tick();
      }
      // The rival tries to take the records still waiting their turn in this batch.
      List<ConsumerRecord<String, String>> waiting =
          sent.subList((int) record.offset() + 1, sent.size());
      if (!waiting.isEmpty()) {
        rivalResults.add(rival.process(waiting, group));
      }
    }).build();
    start(slow, group, topic);

    Await.until("everything committed (or the rival ran a record)",
        () -> Map.of(0, 5L).equals(Broker.committed(group))
            || rivalResults.stream().anyMatch(r -> r.handled() > 0),
        () -> Broker.committed(group) + " " + effects.counts());
    assertThat(effects.counts()).hasSize(5).allSatisfy((event, n) -> assertThat(n).isOne());
    assertThat(rivalResults).as("the waiting records were in progress for the rival").hasSize(4)
        .allSatisfy(r -> {
          assertThat(r.handled()).isZero();
          assertThat(r.offsetsToCommit()).isEmpty();
        });
  }

  @Test
  void withoutAHeartbeatAWaitingRecordTakenOverMeanwhileIsNotRunAgain() {
    String topic = Broker.topic(Broker.unique("waiting"), 1);
    String group = Broker.unique("group");
    for (int i = 0; i < 5; i++) {
      Broker.send(topic, 0, "k" + i, "e" + i);
    }
    List<ConsumerRecord<String, String>> sent = Broker.readAll(topic, 5);
    ManualClock clock = new ManualClock(Instant.now());
    IdempotencyKey k1 = IdempotencyKey.of(group, "k1");
    List<IdempotencyKey> leasesLost = new CopyOnWriteArrayList<>();
    Once once = Once.builder(store()).clock(clock).lease(LEASE).listener(new OnceListener() {
      @Override
      public void onLeaseLost(IdempotencyKey key, long token) {
        leasesLost.add(key);
      }
    }).build();
    IdempotentConsumer<String, String> rival = consumer(once(clock), this::effect).build();
    AtomicReference<BatchResult> rivalResult = new AtomicReference<>();
    IdempotentConsumer<String, String> slow = consumer(once, (record, attempt) -> {
      effect(record, attempt);
      clock.advance(LEASE.plusSeconds(1)); // each handler outlasts the lease; no heartbeat runs
      if (record.value().equals("e0") && rivalResult.get() == null) {
        // The batch's claim on k1 has passed: the rival takes it over and handles e1.
        rivalResult.set(rival.process(List.of(sent.get(1)), group));
      }
    }).build();
    start(slow, group, topic);

    Await.until("e0 committed and k1 found lost before its handler ran",
        () -> Map.of(0, 1L).equals(Broker.committed(group)) && leasesLost.contains(k1),
        () -> Broker.committed(group) + " " + leasesLost + " " + effects.counts());
    assertThat(rivalResult.get().handled()).isOne();
    assertThat(effects.counts()).isEqualTo(Map.of("e0", 1, "e1", 1));
    clock.advance(Duration.ofSeconds(1)); // past the partition's pause (the loop's clock)

    // e1 is a duplicate now; e2..e4 outlast the lease each too, but nobody takes them: the
    // lease of each is extended just before its handler runs.
    Await.until("everything committed", () -> Map.of(0, 5L).equals(Broker.committed(group)),
        () -> Broker.committed(group) + " " + effects.counts());
    assertThat(effects.counts()).hasSize(5).allSatisfy((event, n) -> assertThat(n).isOne());
    assertThat(leasesLost).containsExactly(k1);
  }

  @Test
  void outcomesTheStoreFailedToTakeAreStoredNotRunAgainWhenItRecovers() {
    String topic = Broker.topic(Broker.unique("outage"), 1);
    String group = Broker.unique("group");
    for (int i = 0; i < 5; i++) {
      Broker.send(topic, 0, "k" + i, "e" + i);
    }
    StoreOutage outage = outage();
    ManualClock clock = new ManualClock(Instant.now());
    AtomicInteger failedCompletions = new AtomicInteger();
    Once once = Once.builder(outage.store()).clock(clock).lease(LEASE)
        .listener(failedCalls("completeAll", failedCompletions)).build();
    AtomicBoolean broken = new AtomicBoolean();
    IdempotentConsumer<String, String> consumer = consumer(once, (record, attempt) -> {
      effect(record, attempt);
      if (record.value().equals("e4") && broken.compareAndSet(false, true)) {
        outage.begin(); // the last handler has returned: the batch's completeAll fails
      }
    }).build();
    try {
      start(consumer, group, topic);
      Await.until("the batch's completeAll failed", () -> failedCompletions.get() > 0,
          effects.counts()::toString);
      assertThat(effects.counts()).hasSize(5);
    } finally {
      outage.end();
    }
    // The records come again only after the lease, and no heartbeat extended the claims. The
    // kept outcomes are stored first, so they are duplicates.
    clock.advance(LEASE.plusSeconds(1));
    awaitCommitted(group, Map.of(0, 5L), clock);
    assertThat(effects.counts()).hasSize(5).allSatisfy((event, n) -> assertThat(n).isOne());
    for (int i = 0; i < 5; i++) {
      assertThat(store().find(IdempotencyKey.of(group, "k" + i)).orElseThrow().status())
          .isEqualTo(Status.COMPLETED);
    }
  }

  @Test
  void theHeartbeatStoresKeptOutcomesOnceTheStoreRecoversAndKeepsTheirClaimsMeanwhile() {
    String topic = Broker.topic(Broker.unique("outage-beat"), 1);
    String group = Broker.unique("group");
    for (int i = 0; i < 5; i++) {
      Broker.send(topic, 0, "k" + i, "e" + i);
    }
    List<ConsumerRecord<String, String>> sent = Broker.readAll(topic, 5);
    StoreOutage outage = outage();
    ManualClock clock = new ManualClock(Instant.now());
    ManualScheduler beats = new ManualScheduler();
    AtomicInteger failedCompletions = new AtomicInteger();
    List<IdempotencyKey> failedBeats = new CopyOnWriteArrayList<>();
    Once once = Once.builder(outage.store()).clock(clock).lease(LEASE).heartbeat(beats)
        .listener(new OnceListener() {
          @Override
          public void onHeartbeatFailed(IdempotencyKey key, long token, Throwable error) {
            failedBeats.add(key);
          }

          @Override
          public void onStoreCall(String operation, Duration elapsed, boolean succeeded) {
            if (operation.equals("completeAll") && !succeeded) {
              failedCompletions.incrementAndGet();
            }
          }
        }).build();
    AtomicBoolean broken = new AtomicBoolean();
    IdempotentConsumer<String, String> consumer = consumer(once, (record, attempt) -> {
      effect(record, attempt);
      if (record.value().equals("e4") && broken.compareAndSet(false, true)) {
        outage.begin();
      }
    }).build();
    try {
      start(consumer, group, topic);
      Await.until("the batch's completeAll failed", () -> failedCompletions.get() > 0,
          effects.counts()::toString);
      // The store is still down: each beat fails, is told, and keeps the claims. (Ticked until
      // the processor has kept them: the listener hears of the failed call before that.)
      Await.until("a failed beat for each kept claim", () -> {
        beats.tick();
        return Set.copyOf(failedBeats).size() == 5;
      }, failedBeats::toString);
    } finally {
      outage.end();
    }
    beats.tick(); // the store is back: the beat stores the kept outcomes, before any redelivery
    for (int i = 0; i < 5; i++) {
      assertThat(store().find(IdempotencyKey.of(group, "k" + i)).orElseThrow().status())
          .isEqualTo(Status.COMPLETED);
    }
    // Long after the lease, another consumer gets them as duplicates.
    clock.advance(LEASE.multipliedBy(2));
    BatchResult rival = consumer(once(clock), this::effect).build().process(sent, group);
    assertThat(rival.replayed()).isEqualTo(5);

    awaitCommitted(group, Map.of(0, 5L), clock);
    assertThat(effects.counts()).hasSize(5).allSatisfy((event, n) -> assertThat(n).isOne());
  }

  @Test
  void holderThatDiedIsTakenOverWhenItsLeaseEnds() {
    String topic = Broker.topic(Broker.unique("takeover"), 1);
    String group = Broker.unique("group");
    ManualClock clock = new ManualClock(Instant.now());
    AtomicInteger inProgressAnswers = new AtomicInteger();
    Once once = Once.builder(store()).clock(clock).lease(LEASE).listener(new OnceListener() {
      @Override
      public void onInProgress(IdempotencyKey key) {
        inProgressAnswers.incrementAndGet();
      }
    }).build();
    IdempotencyKey k0 = IdempotencyKey.of(group, "k0");
    store().claim(new ClaimRequest(k0, Fingerprint.of("e0"), clock.instant(), LEASE,
        Duration.ofHours(1)));
    AtomicReference<Attempt> seen = new AtomicReference<>();
    Broker.send(topic, 0, "k0", "e0");
    start(consumer(once, (record, attempt) -> {
      seen.set(attempt);
      effect(record, attempt);
    }).build(), group, topic);

    Await.until("k0 found in progress", () -> inProgressAnswers.get() >= 1);
    assertThat(effects.counts()).isEmpty();
    clock.advance(LEASE.plusSeconds(1));
    Await.until("e0 handled by a takeover", () -> effects.count("e0") == 1);
    assertThat(seen.get().takeover()).isTrue();
    assertThat(seen.get().attemptNumber()).isEqualTo(2);
    Await.until("committed", () -> Map.of(0, 1L).equals(Broker.committed(group)));
  }

  @Test
  void recordWithoutKeyIsDeadLetteredByDefault() {
    String topic = Broker.topic(Broker.unique("nokey"), 1);
    String group = Broker.unique("group");
    Broker.send(topic, 0, null, "anonymous");
    Broker.send(topic, 0, "k1", "e1");
    start(consumer(once(Clock.systemUTC()), this::effect).build(), group, topic);

    Await.until("everything committed", () -> Map.of(0, 2L).equals(Broker.committed(group)));
    assertThat(effects.counts()).isEqualTo(Map.of("e1", 1));
    List<ConsumerRecord<String, String>> dead = Broker.readAll(topic + "-dlt", 1);
    assertThat(dead).singleElement().satisfies(r -> {
      assertThat(r.value()).isEqualTo("anonymous");
      assertThat(Broker.header(r, DeadLetterHeaders.REASON)).isEqualTo("NO_KEY");
      assertThat(Broker.header(r, DeadLetterHeaders.IDEMPOTENCY_KEY)).isNull();
      assertThat(Broker.header(r, DeadLetterHeaders.ATTEMPTS)).isEqualTo("0");
    });
  }

  @Test
  void recordWithoutKeyIsProcessedUnprotectedWhenConfigured() {
    String topic = Broker.topic(Broker.unique("unprotected"), 1);
    String group = Broker.unique("group");
    List<Attempt> attempts = new ArrayList<>();
    Broker.send(topic, 0, null, "anonymous");
    Broker.send(topic, 0, null, "anonymous");
    start(consumer(once(Clock.systemUTC()), (record, attempt) -> {
      synchronized (attempts) {
        attempts.add(attempt);
      }
      effect(record, attempt);
    }).config(retries().noKeyPolicy(NoKeyPolicy.PROCESS_UNPROTECTED).build()).build(), group,
        topic);

    Await.until("everything committed", () -> Map.of(0, 2L).equals(Broker.committed(group)));
    assertThat(effects.counts()).as("no protection: both run").isEqualTo(Map.of("anonymous", 2));
    assertThat(attempts).containsExactly(null, null);
    assertThat(deadLettersPublished).hasValue(0);
  }

  @Test
  void keyFromADerivationWhenTheHeaderIsMissing() {
    String topic = Broker.topic(Broker.unique("derived"), 1);
    String group = Broker.unique("group");
    Broker.send(topic, 0, null, "order-7");
    Broker.send(topic, 0, null, "order-7");
    Broker.send(topic, 0, "explicit", "order-8");
    start(consumer(once(Clock.systemUTC()), this::effect)
        .key(KeyDerivation.<String, String>header(KeyDerivation.DEFAULT_HEADER)
            .orElse(KeyDerivation.sha256OfValue()))
        .build(), group, topic);

    Await.until("everything committed", () -> Map.of(0, 3L).equals(Broker.committed(group)));
    assertThat(effects.counts()).isEqualTo(Map.of("order-7", 1, "order-8", 1));
    assertThat(store().find(IdempotencyKey.of(group, "explicit"))).isPresent();
  }

  @Test
  void keyReusedWithAnotherPayloadIsDeadLettered() {
    String topic = Broker.topic(Broker.unique("reused"), 1);
    String group = Broker.unique("group");
    Broker.send(topic, 0, "k1", "e1");
    Broker.send(topic, 0, "k1", "something else");
    Broker.send(topic, 0, "k2", "e2");
    start(consumer(once(Clock.systemUTC()), this::effect).build(), group, topic);

    Await.until("everything committed", () -> Map.of(0, 3L).equals(Broker.committed(group)));
    assertThat(effects.counts()).isEqualTo(Map.of("e1", 1, "e2", 1));
    assertThat(Broker.readAll(topic + "-dlt", 1)).singleElement().satisfies(r -> {
      assertThat(r.value()).isEqualTo("something else");
      assertThat(Broker.header(r, DeadLetterHeaders.REASON)).isEqualTo("KEY_REUSED");
      assertThat(Broker.header(r, DeadLetterHeaders.EXCEPTION_CLASS))
          .isEqualTo(dev.once.KeyReusedException.class.getName());
    });
  }

  // ---------------------------------------------------------------------------------------------

  Once once(Clock clock) {
    return Once.builder(store()).clock(clock).lease(LEASE).build();
  }

  /**
   * Waits for {@code group} to commit {@code offsets}, moving {@code clock} on by 100 ms at each
   * look: the loop pauses a partition until a time of that clock, which may have been set after
   * the test last moved it.
   */
  void awaitCommitted(String group, Map<Integer, Long> offsets, ManualClock clock) {
    Await.until("offsets " + offsets + " committed", () -> {
      if (offsets.equals(Broker.committed(group))) {
        return true;
      }
      clock.advance(Duration.ofMillis(100));
      return false;
    }, () -> Broker.committed(group) + " " + effects.counts());
  }

  /** A listener counting the failed store calls of one operation ("completeAll", …). */
  static OnceListener failedCalls(String operation, AtomicInteger count) {
    return new OnceListener() {
      @Override
      public void onStoreCall(String op, Duration elapsed, boolean succeeded) {
        if (op.equals(operation) && !succeeded) {
          count.incrementAndGet();
        }
      }
    };
  }

  /** Short backoffs, so a test's retries take milliseconds. */
  static BatchConfig.Builder retries() {
    return BatchConfig.builder().retryBackoff(Duration.ofMillis(10), Duration.ofMillis(50))
        .inProgressBackoff(Duration.ofMillis(50));
  }

  IdempotentConsumer.Builder<String, String> consumer(Once once,
      MessageHandler<ConsumerRecord<String, String>> handler) {
    DeadLetterPublisher<ConsumerRecord<String, String>> kafka =
        KafkaDeadLetters.to(Broker.PRODUCER);
    return IdempotentConsumer.builder(once, handler)
        .deadLetters(letter -> {
          kafka.publish(letter);
          deadLettersPublished.incrementAndGet();
        })
        .config(retries().build())
        .pollTimeout(Duration.ofMillis(100));
  }

  Future<?> start(IdempotentConsumer<String, String> consumer, String group, String topic) {
    IdempotentConsumerLoop<String, String> loop = consumer.loop(Broker.consumer(group),
        List.of(topic));
    loops.add(loop);
    return threads.submit(loop);
  }

  void effect(ConsumerRecord<String, String> record, Attempt attempt) {
    effects.record(record.value(), String.valueOf(record.partition()));
  }

  static Throwable catchCause(Future<?> future) throws InterruptedException {
    try {
      future.get();
      return null;
    } catch (ExecutionException e) {
      return e.getCause();
    }
  }

  /** Stands for the death of the consumer's process in the middle of a batch. */
  static final class SimulatedCrash extends Error {
    private static final long serialVersionUID = 1L;
  }

  /** A failure no retry can fix. */
  static final class PoisonException extends Exception {
    private static final long serialVersionUID = 1L;

    PoisonException(String message) {
      super(message);
    }
  }
}
