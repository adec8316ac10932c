package dev.once.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.rabbitmq.client.Connection;
import com.rabbitmq.client.Delivery;
import com.rabbitmq.client.GetResponse;
import dev.once.Attempt;
import dev.once.FailurePolicy;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.KeyReusedException;
import dev.once.Once;
import dev.once.OnceListener;
import dev.once.batch.BatchConfig;
import dev.once.batch.MessageHandler;
import dev.once.rabbitmq.spring.OnceRabbitListener;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.IdempotencyStore;
import dev.once.spi.Outcome;
import dev.once.spi.Status;
import dev.once.testkit.Await;
import dev.once.testkit.Effects;
import dev.once.testkit.ManualClock;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.springframework.amqp.core.AcknowledgeMode;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.rabbit.connection.CachingConnectionFactory;
import org.springframework.amqp.rabbit.listener.SimpleMessageListenerContainer;

/**
 * The idempotent consumer (and the Spring AMQP listener) against the real RabbitMQ server, for one
 * store. A store joins by subclassing and naming its store, where the handlers' side effects are
 * recorded, and a real outage of it. Each test has its own queue, dead-letter exchange and
 * dead-letter queue (deleted after it), and so its own scope.
 */
abstract class RabbitConsumerContract {

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
  private Rabbit.Topology topology;
  private String queue;
  private final List<Subscription> subscriptions = new ArrayList<>();
  private final List<Connection> connections = new ArrayList<>();
  private final List<AutoCloseable> closeables = new ArrayList<>();

  @BeforeEach
  void setUp(TestInfo info) {
    effects = newEffects();
    String name = info.getTestMethod().orElseThrow().getName().toLowerCase(Locale.ROOT);
    topology = Rabbit.topology(name.substring(0, Math.min(24, name.length())));
    queue = topology.queue();
  }

  @AfterEach
  void tearDown() throws Exception {
    subscriptions.forEach(Subscription::close);
    for (AutoCloseable c : closeables) {
      c.close();
    }
    for (Connection c : connections) {
      if (c.isOpen()) {
        c.abort();
      }
    }
    Rabbit.delete(topology);
  }

  // ---------------------------------------------------------------------------------------------

  @Test
  void producerDuplicatesHaveOneEffectAndAreAllAcknowledged() {
    for (int copy = 0; copy < 3; copy++) {
      for (int i = 0; i < 10; i++) {
        Rabbit.publish(queue, "m" + i, "e" + i); // the same message id: a producer's retry
      }
    }
    Counts counts = new Counts();
    AtomicInteger runs = new AtomicInteger();
    Subscription subscription = start(consumer(once(counts), (d, attempt) -> {
      runs.incrementAndGet();
      effect(d);
    }).build());
    Await.until("10 events handled, 20 duplicates replayed",
        () -> effects.counts().size() == 10 && counts.replayed.get() == 20,
        () -> effects.counts() + " replayed " + counts.replayed);

    for (int i = 0; i < 5; i++) {
      Rabbit.publish(queue, "m" + i, "e" + i); // later, in batches of their own
    }
    Await.until("the late duplicates replayed", () -> counts.replayed.get() == 25,
        () -> "replayed " + counts.replayed);
    assertDrainedAfterClosing(subscription);
    assertThat(effects.counts()).hasSize(10).allSatisfy((event, n) -> assertThat(n).isOne());
    assertThat(runs).hasValue(10);
  }

  @Test
  void consumerWhoseConnectionIsKilledMidBatchHandsOverWithoutRepeatingOrLosingEffects()
      throws Exception {
    for (int i = 0; i < 30; i++) {
      Rabbit.publish(queue, "m" + i, "e" + i);
    }
    CountDownLatch reached = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    // Consumer A does e10's effect, then blocks: its connection is killed under it, with e0..e10
    // done (their outcomes not yet stored: the batch stores them together) and e11.. claimed.
    IdempotentRabbitConsumer a = consumer(once(new Counts()), (d, attempt) -> {
      effect(d);
      if (body(d).equals("e10") && reached.getCount() > 0) {
        reached.countDown();
        release.await();
      }
    }).prefetch(30).linger(Duration.ofSeconds(5)).build(); // one batch of all 30
    Connection connectionA = Rabbit.connect();
    connections.add(connectionA);
    Subscription subscriptionA = a.start(connectionA);
    subscriptions.add(subscriptionA);
    assertThat(reached.await(30, TimeUnit.SECONDS)).isTrue();
    assertThat(effects.counts()).hasSize(11);

    connectionA.abort(); // the broker requeues every message A has not acknowledged
    Counts countsB = new Counts();
    Subscription subscriptionB = start(consumer(once(countsB), this::effect).build());
    // B gets them all again; the keys A still holds are in progress: held, then requeued.
    Await.until("B finds A's keys in progress", () -> countsB.inProgress.get() >= 30,
        () -> "in progress " + countsB.inProgress);
    assertThat(effects.counts()).hasSize(11);

    // A's handler returns: A stores e0..e10, releases the claims it did not run, and its acks
    // fail on the dead channel, which is not a failure of the work.
    release.countDown();
    Await.until("A stopped", () -> !subscriptionA.isRunning());
    assertThat(subscriptionA.failure()).isNull();

    Await.until("30 events handled", () -> effects.counts().size() == 30,
        () -> effects.counts().toString());
    Await.until("e0..e10 replayed by B", () -> countsB.replayed.get() == 11,
        () -> "replayed " + countsB.replayed);
    assertDrainedAfterClosing(subscriptionB);
    assertThat(effects.counts()).hasSize(30).allSatisfy((event, n) -> assertThat(n).isOne());
  }

  @Test
  void connectionLostMidBatchRecoversAndTheRedeliveriesReplayWhatWasDone() throws Exception {
    for (int i = 0; i < 20; i++) {
      Rabbit.publish(queue, "m" + i, "e" + i);
    }
    CuttableProxy proxy = new CuttableProxy(Rabbit.FACTORY.getHost(), Rabbit.FACTORY.getPort());
    closeables.add(proxy);
    com.rabbitmq.client.ConnectionFactory viaProxy = Rabbit.FACTORY.clone();
    viaProxy.setPort(proxy.port());
    viaProxy.setAutomaticRecoveryEnabled(true);
    viaProxy.setNetworkRecoveryInterval(100);
    Connection connection = viaProxy.newConnection("once-rabbitmq-test-recovering");
    connections.add(connection);
    CountDownLatch reached = new CountDownLatch(1);
    CountDownLatch cut = new CountDownLatch(1);
    Counts counts = new Counts();
    Subscription subscription = consumer(once(counts), (d, attempt) -> {
      effect(d);
      if (body(d).equals("e10") && reached.getCount() > 0) {
        reached.countDown();
        cut.await();
      }
    }).prefetch(20).linger(Duration.ofSeconds(5)).key(d -> {
      counts.event(d.getProperties().getMessageId(), "delivered");
      return d.getProperties().getMessageId();
    }).build().start(connection);
    subscriptions.add(subscription);
    assertThat(reached.await(30, TimeUnit.SECONDS)).isTrue();

    proxy.cutAll(); // a network failure: the broker requeues all 20, the client recovers
    cut.countDown(); // e10 returns; the batch's outcomes are stored, its acks lost
    // Every message comes again after the recovery and is then final: replayed if its outcome
    // was stored before, else handled.
    Await.until("each message delivered again and final after it", () -> IntStream.range(0, 20)
        .allMatch(i -> counts.finalAfterRedelivery("m" + i)), counts::events);
    assertThat(subscription.isRunning()).as("still consuming after the recovery").isTrue();
    assertThat(subscription.failure()).isNull();
    assertThat(counts.replayed.get()).as("e0..e10 at least").isGreaterThanOrEqualTo(11);
    assertDrainedAfterClosing(subscription);
    assertThat(effects.counts()).hasSize(20).allSatisfy((event, n) -> assertThat(n).isOne());
  }

  @Test
  void aHandlerErrorStopsTheSubscriptionAndAnotherConsumerFinishesAfterTheLease() {
    for (int i = 0; i < 20; i++) {
      Rabbit.publish(queue, "m" + i, "e" + i);
    }
    ManualClock clock = new ManualClock(Instant.now());
    AtomicBoolean crashed = new AtomicBoolean();
    Subscription first = start(consumer(once(clock, new Counts()), (d, attempt) -> {
      if (body(d).equals("e5") && crashed.compareAndSet(false, true)) {
        throw new SimulatedCrash(); // the process dies before e5's effect, its connection alive
      }
      effect(d);
    }).prefetch(20).linger(Duration.ofSeconds(5)).build()); // one batch of all 20
    Await.until("the first consumer to die", () -> !first.isRunning());
    assertThat(first.failure()).isInstanceOf(SimulatedCrash.class);
    assertThat(effects.counts()).hasSize(5);

    // Its channel was closed as it died, so the broker hands its messages on. e5.. are claimed
    // by the dead consumer: in progress until the lease passes.
    Counts counts = new Counts();
    Subscription second = start(consumer(once(clock, counts), this::effect).build());
    Await.until("the survivor finds the dead consumer's claims",
        () -> counts.inProgress.get() >= 15, () -> "in progress " + counts.inProgress);
    clock.advance(LEASE.plusSeconds(1));
    Await.until("20 events handled", () -> effects.counts().size() == 20,
        () -> effects.counts().toString());
    Await.until("e0..e4 replayed", () -> counts.replayed.get() == 5);
    assertDrainedAfterClosing(second);
    assertThat(effects.counts()).hasSize(20).allSatisfy((event, n) -> assertThat(n).isOne());
  }

  @Test
  void poisonMessageIsDeadLetteredOnceWithItsHeadersAndADuplicateIsOnlyAcknowledged() {
    Counts counts = new Counts();
    Once once = Once.builder(store()).lease(LEASE).listener(counts)
        .failurePolicy(FailurePolicy.retryAll().terminalOn(PoisonException.class)).build();
    Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
    IdempotentRabbitConsumer consumer = consumer(once, (d, attempt) -> {
      runs.computeIfAbsent(body(d), b -> new AtomicInteger()).incrementAndGet();
      if (body(d).startsWith("poison")) {
        throw new PoisonException("cannot parse " + body(d));
      }
      effect(d);
    }).build();
    Rabbit.publish(queue, "m0", "e0");
    Rabbit.publish(queue, Rabbit.withHeaders("m1", Map.of("tenant", "acme")), "poison-1");
    Rabbit.publish(queue, "m2", "e2");
    Subscription subscription = start(consumer);

    GetResponse dead = Rabbit.take(topology.deadLetterQueue(), 1).get(0);
    assertThat(Rabbit.body(dead)).isEqualTo("poison-1");
    assertThat(dead.getProps().getMessageId()).isEqualTo("m1");
    assertThat(dead.getProps().getContentType()).isEqualTo("text/plain");
    assertThat(dead.getProps().getDeliveryMode()).as("persistent").isEqualTo(2);
    assertThat(Rabbit.header(dead, "tenant")).as("its own headers kept").isEqualTo("acme");
    assertThat(Rabbit.header(dead, DeadLetterHeaders.ORIGINAL_EXCHANGE)).isEmpty();
    assertThat(Rabbit.header(dead, DeadLetterHeaders.ORIGINAL_ROUTING_KEY)).isEqualTo(queue);
    assertThat(Rabbit.header(dead, DeadLetterHeaders.ORIGINAL_QUEUE)).isEqualTo(queue);
    assertThat(Rabbit.header(dead, DeadLetterHeaders.MESSAGE_ID)).isEqualTo("m1");
    assertThat(Rabbit.header(dead, DeadLetterHeaders.IDEMPOTENCY_KEY)).isEqualTo("m1");
    assertThat(Rabbit.header(dead, DeadLetterHeaders.REASON)).isEqualTo("TERMINAL_FAILURE");
    assertThat(Rabbit.header(dead, DeadLetterHeaders.EXCEPTION_CLASS))
        .isEqualTo(PoisonException.class.getName());
    assertThat(Rabbit.header(dead, DeadLetterHeaders.EXCEPTION_MESSAGE))
        .isEqualTo("cannot parse poison-1");
    assertThat(dead.getProps().getHeaders().get(DeadLetterHeaders.ATTEMPTS)).isEqualTo(1);
    Await.until("e0, e2 handled", () -> effects.counts().size() == 2);

    // The failure is stored: a redelivered duplicate is a replay, acknowledged, no second letter.
    IdempotencyRecord stored = store().find(IdempotencyKey.of(queue, "m1")).orElseThrow();
    assertThat(stored.status()).isEqualTo(Status.COMPLETED);
    assertThat(stored.outcome().kind()).isEqualTo(Outcome.Kind.FAILURE);
    assertThat(stored.outcome().failureType()).isEqualTo(PoisonException.class.getName());
    Rabbit.publish(queue, Rabbit.withHeaders("m1", Map.of("tenant", "acme")), "poison-1");
    Await.until("the duplicate replayed", () -> counts.replayed.get() == 1);
    assertDrainedAfterClosing(subscription);
    assertThat(Rabbit.ready(topology.deadLetterQueue())).as("no second dead letter").isZero();
    assertThat(runs.get("poison-1")).hasValue(1);
    assertThat(effects.counts()).isEqualTo(Map.of("e0", 1, "e2", 1));
  }

  @Test
  void retryableFailureThatSucceedsOnTheThirdAttemptHasOneEffect() {
    AtomicInteger calls = new AtomicInteger();
    List<Boolean> redelivered = new CopyOnWriteArrayList<>();
    Subscription subscription = start(consumer(once(new Counts()), (d, attempt) -> {
      redelivered.add(d.getEnvelope().isRedeliver());
      if (calls.incrementAndGet() < 3) {
        throw new IllegalStateException("downstream unavailable");
      }
      effect(d);
    }).build());
    Rabbit.publish(queue, "m1", "e1");

    Await.until("e1 handled", () -> effects.count("e1") == 1);
    assertDrainedAfterClosing(subscription);
    assertThat(calls).hasValue(3);
    assertThat(redelivered).as("requeued by the broker between attempts")
        .containsExactly(false, true, true);
    assertThat(effects.counts()).isEqualTo(Map.of("e1", 1));
    assertThat(Rabbit.ready(topology.deadLetterQueue())).isZero();
  }

  @Test
  void retryableFailureThatNeverSucceedsIsDeadLetteredAfterMaxAttemptsWithoutAHotLoop() {
    AtomicInteger calls = new AtomicInteger();
    AtomicInteger deliveries = new AtomicInteger();
    Subscription subscription = start(consumer(once(new Counts()), (d, attempt) -> {
      calls.incrementAndGet();
      throw new IllegalStateException("downstream keeps failing");
    }).config(RETRIES.toBuilder().maxAttempts(3).build()).key(d -> {
      deliveries.incrementAndGet(); // asked once per delivery
      return d.getProperties().getMessageId();
    }).build());
    Rabbit.publish(queue, "m1", "e1");

    GetResponse dead = Rabbit.take(topology.deadLetterQueue(), 1).get(0);
    assertThat(Rabbit.header(dead, DeadLetterHeaders.REASON)).isEqualTo("RETRIES_EXHAUSTED");
    assertThat(dead.getProps().getHeaders().get(DeadLetterHeaders.ATTEMPTS)).isEqualTo(3);
    assertThat(Rabbit.header(dead, DeadLetterHeaders.EXCEPTION_CLASS))
        .isEqualTo(IllegalStateException.class.getName());
    assertDrainedAfterClosing(subscription);
    assertThat(calls).as("one handler run per attempt, no more").hasValue(3);
    assertThat(deliveries).as("one delivery per attempt: no hot loop").hasValue(3);
    IdempotencyRecord stored = store().find(IdempotencyKey.of(queue, "m1")).orElseThrow();
    assertThat(stored.status()).isEqualTo(Status.COMPLETED);
    assertThat(stored.outcome().kind()).isEqualTo(Outcome.Kind.FAILURE);
  }

  @Test
  void messageInProgressElsewhereIsRequeuedAfterABackoffAndProcessedOnceTheClaimResolves() {
    // Another worker holds k1 and k3 (a consumer on another connection, still running).
    Instant now = Instant.now();
    Claim.Acquired k1 = holdElsewhere("k1", "e1", now);
    Claim.Acquired k3 = holdElsewhere("k3", "e3", now);
    Map<String, AtomicInteger> deliveries = new ConcurrentHashMap<>();
    List<String> redelivered = new CopyOnWriteArrayList<>();
    Counts counts = new Counts();
    Subscription subscription = start(consumer(once(counts), this::effect).key(d -> {
      String key = d.getProperties().getMessageId();
      deliveries.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
      if (d.getEnvelope().isRedeliver()) {
        redelivered.add(key);
      }
      return key;
    }).build());
    for (int i = 0; i < 4; i++) {
      Rabbit.publish(queue, "k" + i, "e" + i);
    }

    Await.until("e0, e2 handled and k1, k3 delivered again and again",
        () -> effects.counts().size() == 2 && deliveries.get("k1") != null
            && deliveries.get("k1").get() >= 3 && deliveries.get("k3").get() >= 3,
        () -> effects.counts() + " " + deliveries);
    assertThat(effects.counts()).isEqualTo(Map.of("e0", 1, "e2", 1));
    assertThat(redelivered).contains("k1", "k3");
    assertThat(counts.inProgress.get()).isGreaterThanOrEqualTo(4);

    // The other worker gives k1 up (it failed retryably) and finishes k3.
    store().fail(IdempotencyKey.of(queue, "k1"), k1.token(), "gave up", Instant.now(),
        Duration.ofHours(1));
    store().complete(IdempotencyKey.of(queue, "k3"), k3.token(),
        Outcome.success("text/plain", new byte[0]), Instant.now(), Duration.ofHours(1));
    Await.until("e1 handled here, k3 replayed",
        () -> effects.count("e1") == 1 && counts.replayed.get() >= 1,
        () -> effects.counts() + " replayed " + counts.replayed);
    assertDrainedAfterClosing(subscription);
    assertThat(effects.counts()).isEqualTo(Map.of("e0", 1, "e1", 1, "e2", 1));
  }

  @Test
  void messagesOfASingleConsumerQueueAreHandledInPublishOrder() {
    List<String> published = IntStream.range(0, 60).mapToObj(i -> "e" + i).toList();
    Subscription subscription = start(consumer(once(new Counts()), this::effect)
        .prefetch(10).build());
    for (int i = 0; i < published.size(); i++) {
      Rabbit.publish(queue, "m" + i, published.get(i));
    }
    Await.until("60 events handled", () -> effects.counts().size() == 60,
        () -> effects.counts().toString());
    assertThat(effects.sequence()).isEqualTo(published);
    assertDrainedAfterClosing(subscription);
  }

  @Test
  void outcomesTheStoreFailedToTakeAreStoredNotRunAgainWhenItRecovers() {
    for (int i = 0; i < 5; i++) {
      Rabbit.publish(queue, "m" + i, "e" + i);
    }
    StoreOutage outage = outage();
    AtomicInteger failedCompletions = new AtomicInteger();
    Counts counts = new Counts() {
      @Override
      public void onStoreCall(String operation, Duration elapsed, boolean succeeded) {
        if (operation.equals("completeAll") && !succeeded) {
          failedCompletions.incrementAndGet();
        }
      }
    };
    Once once = Once.builder(outage.store()).lease(LEASE).listener(counts).build();
    AtomicBoolean broken = new AtomicBoolean();
    AtomicInteger runs = new AtomicInteger();
    Subscription subscription;
    try {
      subscription = start(consumer(once, (d, attempt) -> {
        runs.incrementAndGet();
        effect(d);
        if (body(d).equals("e4") && broken.compareAndSet(false, true)) {
          outage.begin(); // the last handler has returned: the batch's completeAll fails
        }
      }).prefetch(5).linger(Duration.ofSeconds(5)).build()); // one batch of all five
      Await.until("the batch's completeAll failed", () -> failedCompletions.get() > 0,
          effects.counts()::toString);
      assertThat(effects.counts()).hasSize(5);
    } finally {
      outage.end();
    }
    // The messages were held and requeued meanwhile; the kept outcomes are stored first, so the
    // redeliveries are replays.
    Await.until("all five replayed", () -> counts.replayed.get() >= 5,
        () -> "replayed " + counts.replayed);
    assertDrainedAfterClosing(subscription);
    assertThat(runs).hasValue(5);
    assertThat(effects.counts()).hasSize(5).allSatisfy((event, n) -> assertThat(n).isOne());
    for (int i = 0; i < 5; i++) {
      assertThat(store().find(IdempotencyKey.of(queue, "m" + i)).orElseThrow().status())
          .isEqualTo(Status.COMPLETED);
    }
  }

  @Test
  void messageWithoutKeyIsDeadLetteredAndAKeyReusedWithAnotherBodyToo() {
    Subscription subscription = start(consumer(once(new Counts()), this::effect).build());
    Rabbit.publish(queue, (String) null, "anonymous");
    Rabbit.publish(queue, "m1", "e1");
    Await.until("e1 handled", () -> effects.count("e1") == 1);
    Rabbit.publish(queue, "m1", "something else");

    List<GetResponse> dead = Rabbit.take(topology.deadLetterQueue(), 2);
    assertThat(dead).extracting(Rabbit::body).containsExactly("anonymous", "something else");
    assertThat(Rabbit.header(dead.get(0), DeadLetterHeaders.REASON)).isEqualTo("NO_KEY");
    assertThat(Rabbit.header(dead.get(0), DeadLetterHeaders.IDEMPOTENCY_KEY)).isNull();
    assertThat(dead.get(0).getProps().getHeaders().get(DeadLetterHeaders.ATTEMPTS)).isEqualTo(0);
    assertThat(Rabbit.header(dead.get(1), DeadLetterHeaders.REASON)).isEqualTo("KEY_REUSED");
    assertThat(Rabbit.header(dead.get(1), DeadLetterHeaders.EXCEPTION_CLASS))
        .isEqualTo(KeyReusedException.class.getName());
    assertDrainedAfterClosing(subscription);
    assertThat(effects.counts()).isEqualTo(Map.of("e1", 1));
  }

  @Test
  void keyFromAHeader() {
    Subscription subscription = start(consumer(once(new Counts()), this::effect)
        .keyFromHeader("idempotency-key").build());
    Rabbit.publish(queue, Rabbit.withHeaders("a", Map.of("idempotency-key", "order-7")), "e7");
    Rabbit.publish(queue, Rabbit.withHeaders("b", Map.of("idempotency-key", "order-7")), "e7");
    Rabbit.publish(queue, Rabbit.withHeaders("c", Map.of("idempotency-key", "order-8")), "e8");
    Await.until("e7, e8 handled", () -> effects.counts().size() == 2);
    assertDrainedAfterClosing(subscription);
    assertThat(effects.counts()).isEqualTo(Map.of("e7", 1, "e8", 1));
    assertThat(store().find(IdempotencyKey.of(queue, "order-7"))).isPresent();
  }

  @Test
  void aDeadLetterNoQueueTakesIsNotAcknowledgedAndIsPublishedOnceAQueueIsBound() {
    // An exchange with nothing bound: the mandatory publish comes back, so the poison message is
    // not acknowledged; it is retried until the dead letter can be delivered.
    String orphan = queue + ".orphan-dlx";
    Rabbit.declareExchange(orphan);
    Once once = Once.builder(store()).lease(LEASE)
        .failurePolicy(FailurePolicy.retryAll().terminalOn(PoisonException.class)).build();
    AtomicInteger runs = new AtomicInteger();
    Subscription subscription = start(consumer(once, (d, attempt) -> {
      runs.incrementAndGet();
      throw new PoisonException("bad");
    }).deadLetterExchange(orphan).build());
    Rabbit.publish(queue, "m1", "poison");
    Await.until("two unroutable attempts", () -> runs.get() >= 2);
    assertThat(store().find(IdempotencyKey.of(queue, "m1")).orElseThrow().status())
        .as("no failure stored without its dead letter").isNotEqualTo(Status.COMPLETED);

    Rabbit.bind(topology.deadLetterQueue(), orphan, queue);
    GetResponse dead = Rabbit.take(topology.deadLetterQueue(), 1).get(0);
    assertThat(Rabbit.header(dead, DeadLetterHeaders.REASON)).isEqualTo("TERMINAL_FAILURE");
    Await.until("the failure stored", () -> store().find(IdempotencyKey.of(queue, "m1"))
        .orElseThrow().status() == Status.COMPLETED);
    assertDrainedAfterClosing(subscription);
  }

  // --- Spring AMQP -----------------------------------------------------------------------------

  @Test
  void springListenerRunsDuplicatesOnceAndAcknowledgesThemAll() {
    for (int copy = 0; copy < 3; copy++) {
      for (int i = 0; i < 10; i++) {
        Rabbit.publish(queue, "m" + i, "e" + i);
      }
    }
    Counts counts = new Counts();
    AtomicInteger runs = new AtomicInteger();
    SimpleMessageListenerContainer container = springContainer(OnceRabbitListener
        .builder(once(counts), (Message m, Attempt attempt) -> {
          runs.incrementAndGet();
          effects.record(new String(m.getBody(), StandardCharsets.UTF_8));
        })
        .scope(queue).deadLetterExchange(topology.deadLetterExchange()).build());
    Await.until("10 handled, 20 replayed",
        () -> effects.counts().size() == 10 && counts.replayed.get() == 20,
        () -> effects.counts() + " replayed " + counts.replayed);
    container.stop();
    assertThat(Rabbit.ready(queue)).as("everything acknowledged").isZero();
    assertThat(runs).hasValue(10);
    assertThat(effects.counts()).hasSize(10).allSatisfy((event, n) -> assertThat(n).isOne());
  }

  @Test
  void springListenerDeadLettersPoisonOnceAndRetriesWithABackoff() {
    Counts counts = new Counts();
    Once once = Once.builder(store()).lease(LEASE).listener(counts)
        .failurePolicy(FailurePolicy.retryAll().terminalOn(PoisonException.class)).build();
    AtomicInteger flaky = new AtomicInteger();
    Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
    SimpleMessageListenerContainer container = springContainer(OnceRabbitListener
        .builder(once, (Message m, Attempt attempt) -> {
          String body = new String(m.getBody(), StandardCharsets.UTF_8);
          runs.computeIfAbsent(body, b -> new AtomicInteger()).incrementAndGet();
          if (body.startsWith("poison")) {
            throw new PoisonException("cannot parse " + body);
          }
          if (body.equals("flaky") && flaky.incrementAndGet() < 3) {
            throw new IllegalStateException("downstream unavailable");
          }
          effects.record(body);
        })
        .scope(queue).deadLetterExchange(topology.deadLetterExchange())
        .config(RETRIES)
        .build());
    Rabbit.publish(queue, "m0", "e0");
    Rabbit.publish(queue, "m1", "poison-1");
    Rabbit.publish(queue, "m2", "flaky");

    GetResponse dead = Rabbit.take(topology.deadLetterQueue(), 1).get(0);
    assertThat(Rabbit.body(dead)).isEqualTo("poison-1");
    assertThat(Rabbit.header(dead, DeadLetterHeaders.REASON)).isEqualTo("TERMINAL_FAILURE");
    assertThat(Rabbit.header(dead, DeadLetterHeaders.ORIGINAL_QUEUE)).isEqualTo(queue);
    assertThat(Rabbit.header(dead, DeadLetterHeaders.ORIGINAL_ROUTING_KEY)).isEqualTo(queue);
    assertThat(Rabbit.header(dead, DeadLetterHeaders.IDEMPOTENCY_KEY)).isEqualTo("m1");
    assertThat(Rabbit.header(dead, DeadLetterHeaders.EXCEPTION_MESSAGE))
        .isEqualTo("cannot parse poison-1");
    Await.until("e0 and flaky handled", () -> effects.counts().size() == 2,
        () -> effects.counts().toString());

    Rabbit.publish(queue, "m1", "poison-1"); // a duplicate of the dead-lettered message
    Await.until("the duplicate replayed", () -> counts.replayed.get() == 1);
    container.stop();
    assertThat(Rabbit.ready(queue)).as("everything acknowledged").isZero();
    assertThat(Rabbit.ready(topology.deadLetterQueue())).as("no second dead letter").isZero();
    assertThat(runs.get("poison-1")).hasValue(1);
    assertThat(runs.get("flaky")).hasValue(3);
    assertThat(effects.counts()).isEqualTo(Map.of("e0", 1, "flaky", 1));
  }

  @Test
  void springListenerRefusesAContainerThatAcknowledgesByItself() {
    CachingConnectionFactory factory = springConnectionFactory();
    SimpleMessageListenerContainer container = new SimpleMessageListenerContainer(factory);
    container.setQueueNames(queue);
    container.setAcknowledgeMode(AcknowledgeMode.AUTO);
    container.setMessageListener(OnceRabbitListener.builder(once(new Counts()),
        (Message m, Attempt a) -> { }).scope(queue)
        .deadLetterExchange(topology.deadLetterExchange()).build());
    closeables.add(container::stop);
    assertThatThrownBy(container::initialize)
        .hasStackTraceContaining("AcknowledgeMode to MANUAL");
  }

  // ---------------------------------------------------------------------------------------------

  /** Short backoffs, so a test's retries take milliseconds. */
  static final BatchConfig RETRIES = BatchConfig.builder()
      .retryBackoff(Duration.ofMillis(10), Duration.ofMillis(50))
      .inProgressBackoff(Duration.ofMillis(50)).build();

  Once once(Counts counts) {
    return once(Clock.systemUTC(), counts);
  }

  Once once(Clock clock, Counts counts) {
    return Once.builder(store()).clock(clock).lease(LEASE).listener(counts).build();
  }

  IdempotentRabbitConsumer.Builder consumer(Once once, MessageHandler<Delivery> handler) {
    return IdempotentRabbitConsumer.builder(once, handler)
        .queue(queue)
        .deadLetterExchange(topology.deadLetterExchange())
        .prefetch(50)
        .config(RETRIES);
  }

  Subscription start(IdempotentRabbitConsumer consumer) {
    Connection connection = Rabbit.connect();
    connections.add(connection);
    try {
      Subscription subscription = consumer.start(connection);
      subscriptions.add(subscription);
      return subscription;
    } catch (java.io.IOException e) {
      throw new IllegalStateException(e);
    }
  }

  private CachingConnectionFactory springConnectionFactory() {
    CachingConnectionFactory factory = new CachingConnectionFactory(Rabbit.FACTORY.getHost(),
        Rabbit.FACTORY.getPort());
    factory.setUsername(Rabbit.FACTORY.getUsername());
    factory.setPassword(Rabbit.FACTORY.getPassword());
    closeables.add(factory::destroy);
    return factory;
  }

  /** A started container in MANUAL mode with consumer batches of up to 20 and a 10 ms linger. */
  private SimpleMessageListenerContainer springContainer(OnceRabbitListener listener) {
    CachingConnectionFactory factory = springConnectionFactory();
    SimpleMessageListenerContainer container = new SimpleMessageListenerContainer(factory);
    container.setQueueNames(queue);
    container.setAcknowledgeMode(AcknowledgeMode.MANUAL);
    container.setConsumerBatchEnabled(true);
    container.setBatchSize(20);
    container.setPrefetchCount(50);
    container.setReceiveTimeout(10);
    container.setMessageListener(listener);
    closeables.add(0, listener::close); // after the container stops (closed in list order)
    closeables.add(0, container::stop);
    container.afterPropertiesSet();
    container.start();
    return container;
  }

  /**
   * Closes the subscription (its channel: every message not acknowledged goes back to the queue)
   * and checks that nothing went back: every message was acknowledged.
   */
  void assertDrainedAfterClosing(Subscription subscription) {
    subscription.close();
    assertThat(subscription.isRunning()).isFalse();
    assertThat(Rabbit.ready(queue)).as("messages left unacknowledged").isZero();
  }

  private Claim.Acquired holdElsewhere(String key, String body, Instant now) {
    return (Claim.Acquired) store().claim(new ClaimRequest(IdempotencyKey.of(queue, key),
        Fingerprint.of(body), now, LEASE, Duration.ofHours(1)));
  }

  void effect(Delivery d, Attempt attempt) {
    effect(d);
  }

  void effect(Delivery d) {
    effects.record(body(d));
  }

  static String body(Delivery d) {
    return new String(d.getBody(), StandardCharsets.UTF_8);
  }

  /** Counts what the engine told the {@code Once}'s listener. */
  static class Counts implements OnceListener {
    final AtomicInteger replayed = new AtomicInteger();
    final AtomicInteger inProgress = new AtomicInteger();
    final List<IdempotencyKey> inProgressKeys = Collections.synchronizedList(new ArrayList<>());

    /** What happened to each key, in order: "delivered", "completed", "replayed". */
    private final Map<String, List<String>> events = new ConcurrentHashMap<>();

    @Override
    public void onReplayed(IdempotencyKey key) {
      replayed.incrementAndGet();
      event(key.key(), "replayed");
    }

    @Override
    public void onCompleted(IdempotencyKey key, long token, Duration elapsed) {
      event(key.key(), "completed");
    }

    void event(String key, String what) {
      events.computeIfAbsent(key, k -> new CopyOnWriteArrayList<>()).add(what);
    }

    String events() {
      return events.toString();
    }

    /** Whether {@code key} was delivered at least twice and its last delivery became final. */
    boolean finalAfterRedelivery(String key) {
      List<String> log = events.getOrDefault(key, List.of());
      int last = log.lastIndexOf("delivered");
      return log.stream().filter("delivered"::equals).count() >= 2 && last >= 0
          && log.subList(last + 1, log.size()).stream()
              .anyMatch(e -> e.equals("completed") || e.equals("replayed"));
    }

    @Override
    public void onInProgress(IdempotencyKey key) {
      inProgress.incrementAndGet();
      inProgressKeys.add(key);
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
