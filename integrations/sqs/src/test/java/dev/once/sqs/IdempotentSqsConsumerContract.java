package dev.once.sqs;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.FailurePolicy;
import dev.once.IdempotencyKey;
import dev.once.Once;
import dev.once.OnceListener;
import dev.once.batch.MessageHandler;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.IdempotencyStore;
import dev.once.spi.Outcome;
import dev.once.spi.Status;
import dev.once.testkit.Await;
import dev.once.testkit.Effects;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.Message;
import software.amazon.awssdk.services.sqs.model.MessageSystemAttributeName;

/**
 * The idempotent SQS consumer against a real SQS-compatible server (ElasticMQ in this JVM), for
 * one store. A store joins by subclassing and naming its store and where the handlers' side
 * effects are recorded.
 */
abstract class IdempotentSqsConsumerContract {

  /** The store under test, shared by the tests of the class (each test has its own scope). */
  protected abstract IdempotencyStore store();

  /** A fresh, empty record of side effects. */
  protected abstract Effects newEffects();

  private Effects effects;
  private String scope;
  private ExecutorService threads;
  private final List<IdempotentSqsConsumer> consumers = new ArrayList<>();
  private final List<SqsClient> clients = new ArrayList<>();
  private final Map<String, AtomicInteger> calls = new ConcurrentHashMap<>();

  @BeforeEach
  void setUp() {
    effects = newEffects();
    scope = ElasticMq.unique("sqs");
    threads = Executors.newCachedThreadPool();
  }

  @AfterEach
  void tearDown() throws InterruptedException {
    consumers.forEach(IdempotentSqsConsumer::stop);
    consumers.forEach(IdempotentSqsConsumer::close);
    clients.forEach(SqsClient::close);
    threads.shutdownNow();
    threads.awaitTermination(10, TimeUnit.SECONDS);
  }

  // ---------------------------------------------------------------------------------------------

  @Test
  void producerDuplicatesHaveOneEffectAndAreAllDeleted() {
    String queue = ElasticMq.queue("dups");
    for (int i = 0; i < 20; i++) {
      // Each event twice (a producer retry after a lost answer): two SQS messages, one key.
      ElasticMq.send(queue, "k" + i, "e" + i);
      ElasticMq.send(queue, "k" + i, "e" + i);
    }
    // Gathering receives into batches of 25: duplicates meet in one batch and across batches.
    start(consumer(once(), queue, this::effect).batchSize(25).build());
    Await.until("20 events handled", () -> effects.counts().size() == 20,
        () -> effects.counts().toString());

    for (int i = 0; i < 5; i++) {
      ElasticMq.send(queue, "k" + i, "e" + i); // the same events again, later
    }
    Await.until("every message deleted", () -> ElasticMq.messagesIn(queue) == 0,
        () -> ElasticMq.messagesIn(queue) + " left");
    assertThat(effects.counts()).hasSize(20).allSatisfy((event, n) -> assertThat(n).isOne());
  }

  @Test
  void aHandlerSlowerThanTheVisibilityTimeoutIsNotDeliveredToAnotherConsumer() throws Exception {
    String queue = ElasticMq.queue("slow");
    Duration visibility = Duration.ofSeconds(2);
    CountDownLatch running = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    MessageHandler<Message> slow = (message, attempt) -> {
      count(message);
      running.countDown();
      assertThat(release.await(60, TimeUnit.SECONDS)).isTrue();
      effect(message, attempt);
    };
    Counts first = new Counts();
    Counts second = new Counts();
    // Two consumers on the queue: whichever receives the message blocks in its handler; the
    // other keeps polling the queue the whole time.
    start(consumer(once(first), queue, slow).visibilityTimeout(visibility).build());
    start(consumer(once(second), queue, slow).visibilityTimeout(visibility).build());
    ElasticMq.send(queue, "k1", "slow-1");

    assertThat(running.await(30, TimeUnit.SECONDS)).isTrue();
    long since = System.nanoTime();
    Await.until("three visibility timeouts to pass with the handler still running",
        () -> System.nanoTime() - since > visibility.multipliedBy(3).toNanos());
    int inProgressMeanwhile = first.inProgress.get() + second.inProgress.get();
    int receivedMeanwhile = first.acquired.get() + second.acquired.get() + inProgressMeanwhile;
    release.countDown();

    Await.until("the message deleted", () -> ElasticMq.messagesIn(queue) == 0,
        () -> ElasticMq.messagesIn(queue) + " left");
    assertThat(inProgressMeanwhile).as("times the other consumer received the message while its"
        + " handler ran elsewhere").isZero();
    assertThat(receivedMeanwhile).isEqualTo(1);
    assertThat(calls.get("slow-1")).hasValue(1);
    assertThat(effects.count("slow-1")).isOne();
  }

  @Test
  void aConsumerDyingAfterTheEffectBeforeTheDeleteIsReplayedByTheNext() {
    String queue = ElasticMq.queue("crash");
    for (int i = 0; i < 5; i++) {
      ElasticMq.send(queue, "k" + i, "e" + i);
    }
    SqsClient doomed = ElasticMq.newClient();
    clients.add(doomed);
    AtomicBoolean dead = new AtomicBoolean();
    Counts firstCounts = new Counts();
    // The fault: once e2's effect is done, the first consumer's SQS client is closed under it.
    // The outcomes are stored after the handlers return, but no delete (or extension) reaches
    // SQS any more: as if the consumer died right there.
    IdempotentSqsConsumer first = consumer(once(firstCounts), doomed, queue, (message, attempt) -> {
      effect(message, attempt);
      if (message.body().equals("e2") && dead.compareAndSet(false, true)) {
        doomed.close();
      }
    }).visibilityTimeout(Duration.ofSeconds(2)).batchSize(5).build();
    start(first);
    Await.until("the first consumer's client closed after e2", dead::get);
    Await.until("the first consumer's batch stored", () -> firstCounts.completed.get() >= 3,
        () -> firstCounts.toString());
    int handledByFirst = firstCounts.completed.get();

    Counts secondCounts = new Counts();
    start(consumer(once(secondCounts), queue, this::effect).build());
    Await.until("every message deleted", () -> ElasticMq.messagesIn(queue) == 0,
        () -> ElasticMq.messagesIn(queue) + " left, " + effects.counts());

    assertThat(effects.counts()).hasSize(5).allSatisfy((event, n) -> assertThat(n).isOne());
    assertThat(secondCounts.replayed).as("redelivered after the visibility timeout, replayed")
        .hasValue(handledByFirst);
    assertThat(firstCounts.completed.get() + secondCounts.completed.get()).isEqualTo(5);
  }

  @Test
  void stoppingMidBatchReleasesTheRestForAnotherConsumerAtOnce() throws Exception {
    String queue = ElasticMq.queue("stop");
    for (int i = 0; i < 5; i++) {
      ElasticMq.send(queue, "k" + i, "e" + i);
    }
    CountDownLatch running = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    // A visibility timeout longer than the wait below: only a release makes the rest visible.
    IdempotentSqsConsumer first = consumer(once(), queue, (message, attempt) -> {
      effect(message, attempt);
      if (running.getCount() > 0) {
        running.countDown();
        assertThat(release.await(60, TimeUnit.SECONDS)).isTrue();
      }
    }).visibilityTimeout(Duration.ofMinutes(5)).batchSize(5).build();
    start(first);
    assertThat(running.await(30, TimeUnit.SECONDS)).isTrue();
    int received = ElasticMq.messagesIn(queue);
    first.stop(); // mid-batch: one message is being handled, the rest of its batch wait
    release.countDown();
    first.close();

    start(consumer(once(), queue, this::effect).build());
    Await.until("every message deleted", () -> ElasticMq.messagesIn(queue) == 0,
        () -> ElasticMq.messagesIn(queue) + " left, " + effects.counts());
    assertThat(received).isEqualTo(5);
    assertThat(effects.counts()).hasSize(5).allSatisfy((event, n) -> assertThat(n).isOne());
  }

  @Test
  void aRetryableFailureIsRetriedAfterABackoffThenSucceeds() {
    String queue = ElasticMq.queue("retry");
    for (int i = 0; i < 5; i++) {
      ElasticMq.send(queue, "k" + i, "e" + i);
    }
    AtomicBoolean failed = new AtomicBoolean();
    start(consumer(once(), queue, (message, attempt) -> {
      count(message);
      if (message.body().equals("e2") && failed.compareAndSet(false, true)) {
        throw new IllegalStateException("downstream unavailable");
      }
      effect(message, attempt);
    }).build());

    Await.until("every message deleted", () -> effects.counts().size() == 5
        && ElasticMq.messagesIn(queue) == 0, () -> effects.counts().toString());
    assertThat(effects.counts()).allSatisfy((event, n) -> assertThat(n).isOne());
    assertThat(calls.get("e2")).hasValue(2);
    IdempotencyRecord record = record("k2");
    assertThat(record.status()).isEqualTo(Status.COMPLETED);
    assertThat(record.attempts()).isEqualTo(2);
  }

  @Test
  void anAlwaysFailingMessageIsDeadLetteredAfterMaxAttempts() {
    String queue = ElasticMq.queue("exhaust");
    String dlq = ElasticMq.queue("exhaust-dlq");
    ElasticMq.send(queue, "k0", "e0");
    String doomedId = ElasticMq.send(queue, "k1", "doomed-1");
    ElasticMq.send(queue, "k2", "e2");
    start(consumer(once(), queue, (message, attempt) -> {
      count(message);
      if (message.body().startsWith("doomed")) {
        throw new IllegalStateException("downstream keeps failing");
      }
      effect(message, attempt);
    }).config(IdempotentSqsConsumer.Builder.DEFAULT_CONFIG.toBuilder().maxAttempts(3)
        .retryBackoff(Duration.ofSeconds(1), Duration.ofSeconds(1)).build())
        .deadLetterQueue(dlq).build());

    List<Message> dead = ElasticMq.drain(dlq, 1);
    Await.until("every message deleted", () -> ElasticMq.messagesIn(queue) == 0);
    assertThat(dead).hasSize(1);
    assertThat(calls.get("doomed-1")).hasValue(3);
    assertThat(effects.counts()).containsOnlyKeys("e0", "e2");
    Message letter = dead.get(0);
    assertThat(letter.body()).isEqualTo("doomed-1");
    assertThat(ElasticMq.attribute(letter, DeadLetterAttributes.REASON))
        .isEqualTo("RETRIES_EXHAUSTED");
    assertThat(ElasticMq.attribute(letter, DeadLetterAttributes.ATTEMPTS)).isEqualTo("3");
    assertThat(ElasticMq.attribute(letter, DeadLetterAttributes.ORIGINAL_MESSAGE_ID))
        .isEqualTo(doomedId);
    assertThat(ElasticMq.attribute(letter, DeadLetterAttributes.EXCEPTION_MESSAGE))
        .isEqualTo("downstream keeps failing");
    IdempotencyRecord record = record("k1");
    assertThat(record.status()).isEqualTo(Status.COMPLETED);
    assertThat(record.outcome().kind()).isEqualTo(Outcome.Kind.FAILURE);
  }

  @Test
  void aPoisonMessageIsDeadLetteredWithItsAttributesAndItsFailureStored() {
    String queue = ElasticMq.queue("poison");
    String dlq = ElasticMq.queue("poison-dlq");
    Once once = Once.builder(store())
        .failurePolicy(FailurePolicy.retryAll().terminalOn(PoisonException.class)).build();
    Map<String, String> attributes = Map.of(IdempotentSqsConsumer.Builder.DEFAULT_KEY_ATTRIBUTE,
        "k1", "tenant", "acme");
    String poisonId = ElasticMq.send(queue, "poison-1", attributes);
    ElasticMq.send(queue, "k2", "e2");
    start(consumer(once, queue, (message, attempt) -> {
      count(message);
      if (message.body().startsWith("poison")) {
        throw new PoisonException("cannot parse " + message.body());
      }
      effect(message, attempt);
    }).deadLetterQueue(dlq).build());

    List<Message> dead = ElasticMq.drain(dlq, 1);
    Await.until("every message deleted", () -> ElasticMq.messagesIn(queue) == 0);
    assertThat(dead).hasSize(1);
    Message letter = dead.get(0);
    assertThat(letter.body()).isEqualTo("poison-1");
    assertThat(ElasticMq.attribute(letter, DeadLetterAttributes.REASON))
        .isEqualTo("TERMINAL_FAILURE");
    assertThat(ElasticMq.attribute(letter, DeadLetterAttributes.EXCEPTION_CLASS))
        .isEqualTo(PoisonException.class.getName());
    assertThat(ElasticMq.attribute(letter, DeadLetterAttributes.EXCEPTION_MESSAGE))
        .isEqualTo("cannot parse poison-1");
    assertThat(ElasticMq.attribute(letter, DeadLetterAttributes.IDEMPOTENCY_KEY)).isEqualTo("k1");
    assertThat(ElasticMq.attribute(letter, DeadLetterAttributes.ORIGINAL_MESSAGE_ID))
        .isEqualTo(poisonId);
    assertThat(ElasticMq.attribute(letter, DeadLetterAttributes.ATTEMPTS)).isEqualTo("1");
    assertThat(letter.messageAttributes().get(DeadLetterAttributes.ATTEMPTS).dataType())
        .isEqualTo("Number");
    // The original attributes travel along: redriven, the message keeps its key.
    assertThat(ElasticMq.attribute(letter, "idempotency-key")).isEqualTo("k1");
    assertThat(ElasticMq.attribute(letter, "tenant")).isEqualTo("acme");
    IdempotencyRecord stored = record("k1");
    assertThat(stored.status()).isEqualTo(Status.COMPLETED);
    assertThat(stored.outcome().kind()).isEqualTo(Outcome.Kind.FAILURE);
    assertThat(stored.outcome().failureType()).isEqualTo(PoisonException.class.getName());
    assertThat(effects.counts()).containsOnlyKeys("e2");

    // The producer sends it again: the stored failure is replayed, not run nor dead-lettered.
    ElasticMq.send(queue, "poison-1", attributes);
    Await.until("the re-send deleted", () -> ElasticMq.messagesIn(queue) == 0);
    assertThat(calls.get("poison-1")).hasValue(1);
    assertThat(ElasticMq.messagesIn(dlq)).isZero();
  }

  @Test
  void aKeyReusedWithAnotherBodyIsDeadLetteredNotRun() {
    String queue = ElasticMq.queue("reuse");
    String dlq = ElasticMq.queue("reuse-dlq");
    start(consumer(once(), queue, (message, attempt) -> {
      count(message);
      effect(message, attempt);
    }).deadLetterQueue(dlq).build());
    ElasticMq.send(queue, "k1", "order-1 x2");
    Await.until("the first handled", () -> effects.count("order-1 x2") == 1);
    String reusedId = ElasticMq.send(queue, "k1", "order-1 x5");

    List<Message> dead = ElasticMq.drain(dlq, 1);
    Await.until("every message deleted", () -> ElasticMq.messagesIn(queue) == 0);
    assertThat(dead).hasSize(1);
    assertThat(dead.get(0).body()).isEqualTo("order-1 x5");
    assertThat(ElasticMq.attribute(dead.get(0), DeadLetterAttributes.REASON))
        .isEqualTo("KEY_REUSED");
    assertThat(ElasticMq.attribute(dead.get(0), DeadLetterAttributes.ORIGINAL_MESSAGE_ID))
        .isEqualTo(reusedId);
    assertThat(ElasticMq.attribute(dead.get(0), DeadLetterAttributes.ATTEMPTS)).isEqualTo("0");
    assertThat(calls).containsOnlyKeys("order-1 x2");
  }

  @Test
  void withoutADeadLetterQueueTheRedrivePolicyTakesOver() {
    String redriveTarget = ElasticMq.queue("redrive-dlq");
    String queue = ElasticMq.queueWithRedrive("redrive", redriveTarget, 3);
    Once once = Once.builder(store())
        .failurePolicy(FailurePolicy.retryAll().terminalOn(PoisonException.class)).build();
    start(consumer(once, queue, (message, attempt) -> {
      count(message);
      throw new PoisonException("cannot parse " + message.body());
    }).config(IdempotentSqsConsumer.Builder.DEFAULT_CONFIG.toBuilder()
        .retryBackoff(Duration.ofSeconds(1), Duration.ofSeconds(1)).build()).build());
    ElasticMq.send(queue, "k1", "poison-1");

    List<Message> moved = ElasticMq.drain(redriveTarget, 1);
    assertThat(moved).extracting(Message::body).containsExactly("poison-1");
    // Nothing to publish a dead letter to: the failure is not stored (the claim is released) and
    // every receive runs the handler again, until SQS moves the message after maxReceiveCount.
    assertThat(calls.get("poison-1")).hasValue(3);
    assertThat(record("k1").status()).isEqualTo(Status.FAILED);
  }

  @Test
  void aFifoQueueKeepsTheOrderWithinEachMessageGroup() {
    String queue = ElasticMq.fifoQueue("orders");
    for (int i = 0; i < 8; i++) {
      // The deduplication ids are the keys (the default for FIFO).
      ElasticMq.sendFifo(queue, "A", "a" + i, "a" + i);
      ElasticMq.sendFifo(queue, "B", "b" + i, "b" + i);
    }
    AtomicBoolean failed = new AtomicBoolean();
    start(consumer(once(), queue, (message, attempt) -> {
      count(message);
      if (message.body().equals("a3") && failed.compareAndSet(false, true)) {
        throw new IllegalStateException("downstream unavailable");
      }
      effect(message, attempt);
    }).build());

    Await.until("every message deleted", () -> effects.counts().size() == 16
        && ElasticMq.messagesIn(queue) == 0, () -> effects.counts().toString());
    assertThat(effects.sequence("A")).containsExactly("a0", "a1", "a2", "a3", "a4", "a5", "a6",
        "a7");
    assertThat(effects.sequence("B")).containsExactly("b0", "b1", "b2", "b3", "b4", "b5", "b6",
        "b7");
    assertThat(calls.get("a3")).hasValue(2);
    assertThat(record("a3").attempts()).isEqualTo(2);
  }

  // ---------------------------------------------------------------------------------------------

  private Once once() {
    return Once.builder(store()).build();
  }

  private Once once(OnceListener listener) {
    return Once.builder(store()).listener(listener).build();
  }

  private IdempotentSqsConsumer.Builder consumer(Once once, String queue,
      MessageHandler<Message> handler) {
    return consumer(once, ElasticMq.SQS, queue, handler);
  }

  private IdempotentSqsConsumer.Builder consumer(Once once, SqsClient sqs, String queue,
      MessageHandler<Message> handler) {
    return IdempotentSqsConsumer.builder(once, sqs, queue, handler)
        .scope(scope)
        .waitTime(Duration.ofSeconds(1));
  }

  private void start(IdempotentSqsConsumer consumer) {
    consumers.add(consumer);
    threads.submit(consumer);
  }

  private void effect(Message message, dev.once.Attempt attempt) {
    String group = message.attributes().get(MessageSystemAttributeName.MESSAGE_GROUP_ID);
    effects.record(message.body(), group == null ? "" : group);
  }

  private void count(Message message) {
    calls.computeIfAbsent(message.body(), b -> new AtomicInteger()).incrementAndGet();
  }

  private IdempotencyRecord record(String key) {
    return store().find(IdempotencyKey.of(scope, key)).orElseThrow();
  }

  /** What a consumer's {@code Once} saw. */
  static final class Counts implements OnceListener {
    final AtomicInteger acquired = new AtomicInteger();
    final AtomicInteger inProgress = new AtomicInteger();
    final AtomicInteger replayed = new AtomicInteger();
    final AtomicInteger completed = new AtomicInteger();

    @Override
    public void onAcquired(IdempotencyKey key, long token, boolean takeover) {
      acquired.incrementAndGet();
    }

    @Override
    public void onInProgress(IdempotencyKey key) {
      inProgress.incrementAndGet();
    }

    @Override
    public void onReplayed(IdempotencyKey key) {
      replayed.incrementAndGet();
    }

    @Override
    public void onCompleted(IdempotencyKey key, long token, Duration elapsed) {
      completed.incrementAndGet();
    }

    @Override
    public String toString() {
      return "acquired " + acquired + ", in progress " + inProgress + ", replayed " + replayed
          + ", completed " + completed;
    }
  }

  /** A message that can never be handled: a terminal failure. */
  static final class PoisonException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    PoisonException(String message) {
      super(message);
    }
  }
}
