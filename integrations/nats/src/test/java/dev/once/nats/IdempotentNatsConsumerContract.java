package dev.once.nats;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.Attempt;
import dev.once.FailurePolicy;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.Once;
import dev.once.OnceListener;
import dev.once.batch.BatchConfig;
import dev.once.batch.DeadLetter;
import dev.once.batch.MessageHandler;
import dev.once.nats.Broker.Topology;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.IdempotencyStore;
import dev.once.spi.Outcome;
import dev.once.spi.Status;
import dev.once.testkit.Await;
import dev.once.testkit.Effects;
import io.nats.client.Connection;
import io.nats.client.Message;
import io.nats.client.Subscription;
import io.nats.client.api.ConsumerInfo;
import io.nats.client.api.MessageInfo;
import io.nats.client.api.PublishAck;
import io.nats.client.impl.Headers;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The idempotent NATS consumer against the real JetStream server, for one store. A store joins by
 * subclassing and naming its store and where the handlers' side effects are recorded.
 */
abstract class IdempotentNatsConsumerContract {

  static final Duration LEASE = Duration.ofSeconds(30);
  static final Duration LONG_ACK_WAIT = Duration.ofSeconds(30);
  static final Duration DEFAULT_WINDOW = Duration.ofMinutes(2);
  private static final Pattern STREAM_SEQ = Pattern.compile("\"stream_seq\":(\\d+)");

  /** The store under test, shared by the tests of the class (each test has streams of its own). */
  protected abstract IdempotencyStore store();

  /** A fresh, empty record of side effects. */
  protected abstract Effects newEffects();

  private Effects effects;
  private ExecutorService threads;
  private final List<IdempotentNatsConsumer> consumers = new CopyOnWriteArrayList<>();
  private final List<Connection> connections = new CopyOnWriteArrayList<>();
  private final List<Topology> topologies = new CopyOnWriteArrayList<>();

  @BeforeEach
  void setUp() {
    effects = newEffects();
    threads = Executors.newCachedThreadPool();
  }

  @AfterEach
  void tearDown() throws Exception {
    consumers.forEach(IdempotentNatsConsumer::close);
    for (Connection c : connections) {
      c.close();
    }
    threads.shutdownNow();
    threads.awaitTermination(10, TimeUnit.SECONDS);
    topologies.forEach(Broker::delete);
  }

  // ---------------------------------------------------------------------------------------------

  @Test
  void duplicatesJetStreamDoesNotDeduplicateHaveOneEffect() {
    // The key is in a header of the application's own: JetStream's duplicate window (which
    // reads Nats-Msg-Id only) stores every copy.
    Topology t = topology("dups", LONG_ACK_WAIT, DEFAULT_WINDOW);
    for (int i = 0; i < 20; i++) {
      Broker.publish(t.subject(), "e" + i, "Idempotency-Key", "k" + i);
      Broker.publish(t.subject(), "e" + i, "Idempotency-Key", "k" + i);
    }
    assertThat(Broker.messages(t.stream())).isEqualTo(40);
    start(consumer(once(), t, this::effect).key(KeyDerivation.header("Idempotency-Key")));

    Await.until("40 messages settled", () -> Broker.allSettled(t) && effects.counts().size() == 20,
        () -> effects.counts() + " " + Broker.info(t));
    // The same events again, in later batches.
    for (int i = 0; i < 5; i++) {
      Broker.publish(t.subject(), "e" + i, "Idempotency-Key", "k" + i);
    }
    Await.until("the late duplicates settled",
        () -> Broker.info(t).getDelivered().getStreamSequence() == 45 && Broker.allSettled(t));
    assertThat(effects.counts()).hasSize(20).allSatisfy((event, n) -> assertThat(n).isOne());
    assertThat(Broker.deadLetters(t)).isEmpty();
  }

  @Test
  void duplicatesPublishedAfterTheDuplicateWindowHaveOneEffect() {
    Topology t = topology("window", LONG_ACK_WAIT, Duration.ofMillis(200));
    assertThat(Broker.publish(t.subject(), "e1", "Nats-Msg-Id", "k1").isDuplicate()).isFalse();
    // Within the window JetStream drops the copy; once the window has passed it stores it.
    AtomicInteger dropped = new AtomicInteger();
    Await.until("a copy stored after the duplicate window", () -> {
      PublishAck ack = Broker.publish(t.subject(), "e1", "Nats-Msg-Id", "k1");
      if (ack.isDuplicate()) {
        dropped.incrementAndGet();
        return false;
      }
      return true;
    });
    assertThat(Broker.messages(t.stream())).isEqualTo(2);
    start(consumer(once(), t, this::effect)); // key: Nats-Msg-Id, by default

    Await.until("both copies settled", () -> Broker.allSettled(t)
        && Broker.info(t).getDelivered().getStreamSequence() == 2, () -> "" + Broker.info(t));
    assertThat(effects.counts()).isEqualTo(Map.of("e1", 1));
    assertThat(store().find(IdempotencyKey.of(t.stream() + "." + t.consumer(), "k1"))
        .orElseThrow().status()).isEqualTo(Status.COMPLETED);
  }

  @Test
  void inProgressAcksKeepASlowBatchFromOtherConsumersPastTheAckWait() throws Exception {
    Duration ackWait = Duration.ofSeconds(3);
    Topology t = topology("slow", ackWait, DEFAULT_WINDOW);
    SlowHandler slow = new SlowHandler();
    Broker.publish(t.subject(), "e1", "Nats-Msg-Id", "k1");
    start(consumer(once(), t, slow));
    assertThat(slow.started.await(30, TimeUnit.SECONDS)).isTrue();

    // A rival consumer of the same durable consumer fetches all along.
    AtomicInteger rivalSaw = new AtomicInteger();
    start(consumer(onceCounting(rivalSaw), t, this::effect));
    long since = System.nanoTime();
    // JetStream's AckWait runs on the server's clock: only real time can show it passing.
    Await.until("twice the AckWait with the message unacked, or a redelivery",
        () -> System.nanoTime() - since > ackWait.multipliedBy(2).toNanos()
            || rivalSaw.get() > 0 || Broker.info(t).getRedelivered() > 0);
    ConsumerInfo info = Broker.info(t);
    assertThat(info.getRedelivered()).as("redelivered while the handler ran").isZero();
    assertThat(rivalSaw).as("deliveries to the rival while the handler ran").hasValue(0);
    assertThat(info.getNumAckPending()).isOne();

    slow.release.countDown();
    Await.until("settled", () -> Broker.allSettled(t));
    assertThat(effects.counts()).isEqualTo(Map.of("e1", 1));
  }

  /**
   * The previous test with the in-progress acks disabled: a deliberately broken consumer. The
   * slow message is redelivered to the rival after the AckWait, which the previous test shows
   * does not happen with them. (The store still keeps the effect single: the rival finds the key
   * in progress and naks until the slow handler's outcome is stored, then replays it.)
   */
  @Test
  void withoutInProgressAcksASlowBatchIsRedeliveredToAnotherConsumer() throws Exception {
    Duration ackWait = Duration.ofSeconds(3);
    Topology t = topology("broken", ackWait, DEFAULT_WINDOW);
    SlowHandler slow = new SlowHandler();
    Broker.publish(t.subject(), "e1", "Nats-Msg-Id", "k1");
    start(consumer(once(), t, slow).withoutInProgressAcks());
    assertThat(slow.started.await(30, TimeUnit.SECONDS)).isTrue();

    AtomicInteger rivalSaw = new AtomicInteger();
    start(consumer(onceCounting(rivalSaw), t, this::effect));
    Await.until("the message redelivered to the rival", () -> rivalSaw.get() > 0,
        () -> "" + Broker.info(t));
    assertThat(Broker.info(t).getRedelivered()).isPositive();

    slow.release.countDown();
    Await.until("settled", () -> Broker.allSettled(t), () -> "" + Broker.info(t));
    assertThat(effects.counts()).isEqualTo(Map.of("e1", 1));
  }

  @Test
  void connectionClosedAfterTheEffectsBeforeTheAcksIsReplayedByAnotherConsumer()
      throws Exception {
    Topology t = topology("closed", Duration.ofSeconds(2), DEFAULT_WINDOW);
    for (int i = 0; i < 10; i++) {
      Broker.publish(t.subject(), "e" + i, "Nats-Msg-Id", "k" + i);
    }
    CountDownLatch reached = new CountDownLatch(1);
    CountDownLatch resume = new CountDownLatch(1);
    Connection first = Broker.connect();
    connections.add(first);
    Future<?> firstLoop = start(consumer(once(), t, (message, attempt) -> {
      effect(message, attempt);
      if (Broker.text(message.getData()).equals("e4") && reached.getCount() > 0) {
        reached.countDown();
        resume.await();
      }
    }).connection(first).batchSize(10));

    assertThat(reached.await(30, TimeUnit.SECONDS)).isTrue();
    first.close(); // mid-batch: e0..e4 done, none acked
    resume.countDown();
    firstLoop.get(30, TimeUnit.SECONDS); // the loop ends with its connection

    // The batch finished and its outcomes are stored, but no ack reached the server.
    assertThat(effects.counts()).hasSize(10);
    for (int i = 0; i < 10; i++) {
      assertThat(store().find(IdempotencyKey.of(t.stream() + "." + t.consumer(), "k" + i))
          .orElseThrow().status()).isEqualTo(Status.COMPLETED);
    }
    assertThat(Broker.info(t).getNumAckPending()).isEqualTo(10);

    // Another consumer gets them after the AckWait: replays, no handler runs.
    AtomicInteger secondRuns = new AtomicInteger();
    AtomicInteger replayed = new AtomicInteger();
    Once second = Once.builder(store()).lease(LEASE).listener(new OnceListener() {
      @Override
      public void onReplayed(IdempotencyKey key) {
        replayed.incrementAndGet();
      }
    }).build();
    start(consumer(second, t, (message, attempt) -> {
      secondRuns.incrementAndGet();
      effect(message, attempt);
    }));
    Await.until("all redelivered and settled", () -> Broker.allSettled(t),
        () -> "" + Broker.info(t));
    assertThat(replayed).hasValue(10);
    assertThat(secondRuns).hasValue(0);
    assertThat(effects.counts()).hasSize(10).allSatisfy((event, n) -> assertThat(n).isOne());
  }

  @Test
  void aRetryableFailureIsRetriedAfterABackoffThenHandledOnce() {
    Topology t = topology("retry", LONG_ACK_WAIT, DEFAULT_WINDOW);
    List<Long> deliveries = new CopyOnWriteArrayList<>();
    Broker.publish(t.subject(), "e1", "Nats-Msg-Id", "k1");
    start(consumer(once(), t, (message, attempt) -> {
      deliveries.add(message.metaData().deliveredCount());
      if (deliveries.size() <= 2) {
        throw new IllegalStateException("downstream unavailable"); // retryable
      }
      effect(message, attempt);
    }));

    Await.until("settled", () -> Broker.allSettled(t) && effects.count("e1") == 1);
    assertThat(deliveries).as("one delivery per attempt (nak with delay)").containsExactly(1L, 2L,
        3L);
    assertThat(effects.counts()).isEqualTo(Map.of("e1", 1));
    assertThat(Broker.deadLetters(t)).isEmpty();
  }

  @Test
  void aMessageThatAlwaysFailsIsDeadLetteredAfterMaxAttempts() throws Exception {
    Topology t = topology("exhausted", LONG_ACK_WAIT, DEFAULT_WINDOW);
    Subscription terminated = terminations(t);
    AtomicInteger calls = new AtomicInteger();
    PublishAck sent = Broker.publish(t.subject(), "e1", "Nats-Msg-Id", "k1");
    start(consumer(once(), t, (message, attempt) -> {
      calls.incrementAndGet();
      throw new IllegalStateException("downstream keeps failing");
    }).config(RETRIES.toBuilder().maxAttempts(3).build()));

    Await.until("dead-lettered and settled",
        () -> Broker.messages(t.deadLetterStream()) == 1 && Broker.allSettled(t));
    assertThat(calls).hasValue(3);
    MessageInfo letter = Broker.deadLetters(t).get(0);
    assertThat(header(letter, DeadLetterHeaders.REASON)).isEqualTo("RETRIES_EXHAUSTED");
    assertThat(header(letter, DeadLetterHeaders.ATTEMPTS)).isEqualTo("3");
    assertThat(header(letter, DeadLetterHeaders.EXCEPTION_CLASS))
        .isEqualTo(IllegalStateException.class.getName());
    assertThat(terminatedSequences(terminated, 1)).containsExactly(sent.getSeqno());
    IdempotencyRecord stored =
        store().find(IdempotencyKey.of(t.stream() + "." + t.consumer(), "k1")).orElseThrow();
    assertThat(stored.status()).isEqualTo(Status.COMPLETED);
    assertThat(stored.outcome().kind()).isEqualTo(Outcome.Kind.FAILURE);
  }

  @Test
  void aPoisonMessageIsDeadLetteredWithItsHeadersStoredAndTerminated() throws Exception {
    Topology t = topology("poison", LONG_ACK_WAIT, DEFAULT_WINDOW);
    Subscription terminated = terminations(t);
    Map<String, AtomicInteger> runs = new java.util.concurrent.ConcurrentHashMap<>();
    Once once = Once.builder(store()).lease(LEASE)
        .failurePolicy(FailurePolicy.retryAll().terminalOn(PoisonException.class)).build();
    Broker.publish(t.subject(), "e0", "Nats-Msg-Id", "k0");
    PublishAck poison = Broker.publish(t.subject(), "poison", "Nats-Msg-Id", "k1",
        "Trace-Id", "trace-7");
    Broker.publish(t.subject(), "e2", "Nats-Msg-Id", "k2");
    start(consumer(once, t, (message, attempt) -> {
      String text = Broker.text(message.getData());
      runs.computeIfAbsent(text, x -> new AtomicInteger()).incrementAndGet();
      if (text.equals("poison")) {
        throw new PoisonException("cannot parse é\nline 2 at 100%");
      }
      effect(message, attempt);
    }));

    Await.until("dead-lettered and settled",
        () -> Broker.messages(t.deadLetterStream()) == 1 && Broker.allSettled(t));
    assertThat(effects.counts()).isEqualTo(Map.of("e0", 1, "e2", 1));
    assertThat(runs.get("poison")).hasValue(1);
    MessageInfo letter = Broker.deadLetters(t).get(0);
    assertThat(letter.getSubject()).isEqualTo(t.deadLetterSubject());
    assertThat(Broker.text(letter.getData())).isEqualTo("poison");
    assertThat(header(letter, DeadLetterHeaders.REASON)).isEqualTo("TERMINAL_FAILURE");
    assertThat(header(letter, DeadLetterHeaders.EXCEPTION_CLASS))
        .isEqualTo(PoisonException.class.getName());
    assertThat(header(letter, DeadLetterHeaders.EXCEPTION_MESSAGE))
        .isEqualTo("cannot parse %C3%A9%0Aline 2 at 100%25");
    assertThat(header(letter, DeadLetterHeaders.IDEMPOTENCY_KEY)).isEqualTo("k1");
    assertThat(header(letter, DeadLetterHeaders.ORIGINAL_MSG_ID)).isEqualTo("k1");
    assertThat(header(letter, DeadLetterHeaders.ORIGINAL_SUBJECT)).isEqualTo(t.subject());
    assertThat(header(letter, DeadLetterHeaders.ORIGINAL_STREAM)).isEqualTo(t.stream());
    assertThat(header(letter, DeadLetterHeaders.ORIGINAL_CONSUMER)).isEqualTo(t.consumer());
    assertThat(header(letter, DeadLetterHeaders.STREAM_SEQUENCE))
        .isEqualTo(Long.toString(poison.getSeqno()));
    assertThat(header(letter, DeadLetterHeaders.ATTEMPTS)).isEqualTo("1");
    assertThat(header(letter, "Trace-Id")).as("the original's own headers").isEqualTo("trace-7");
    assertThat(header(letter, "Nats-Msg-Id")).as("the letter's own id, not the original's")
        .startsWith("once-dlq:" + t.stream() + ":" + t.consumer() + ":" + poison.getSeqno());

    // The failure is stored (a redelivery replays it) and the original terminated, not acked.
    IdempotencyRecord stored =
        store().find(IdempotencyKey.of(t.stream() + "." + t.consumer(), "k1")).orElseThrow();
    assertThat(stored.status()).isEqualTo(Status.COMPLETED);
    assertThat(stored.outcome().kind()).isEqualTo(Outcome.Kind.FAILURE);
    assertThat(stored.outcome().failureType()).isEqualTo(PoisonException.class.getName());
    assertThat(terminatedSequences(terminated, 1)).containsExactly(poison.getSeqno());
  }

  @Test
  void aMessageInProgressElsewhereIsNakedWithADelayAndHandledOnceItIsReleased() {
    Topology t = topology("elsewhere", LONG_ACK_WAIT, DEFAULT_WINDOW);
    Duration backoff = Duration.ofMillis(300);
    List<Long> inProgressAt = new CopyOnWriteArrayList<>();
    Once once = Once.builder(store()).lease(LEASE).listener(new OnceListener() {
      @Override
      public void onInProgress(IdempotencyKey key) {
        inProgressAt.add(System.nanoTime());
      }
    }).build();
    // Another worker holds k1 (its lease is 30 s).
    IdempotencyKey k1 = IdempotencyKey.of(t.stream() + "." + t.consumer(), "k1");
    Claim.Acquired holder = (Claim.Acquired) store().claim(new ClaimRequest(k1,
        Fingerprint.of("e1".getBytes(java.nio.charset.StandardCharsets.UTF_8)), Instant.now(),
        LEASE, Duration.ofHours(1)));
    List<Long> handledAtDelivery = new CopyOnWriteArrayList<>();
    Broker.publish(t.subject(), "e1", "Nats-Msg-Id", "k1");
    start(consumer(once, t, (message, attempt) -> {
      handledAtDelivery.add(message.metaData().deliveredCount());
      effect(message, attempt);
    }).config(RETRIES.toBuilder().inProgressBackoff(backoff).build()));

    Await.until("k1 found in progress three times", () -> inProgressAt.size() >= 3);
    assertThat(effects.counts()).isEmpty();
    // Each look comes after the nak's delay, not in a hot loop (a lower bound: load only widens).
    for (int i = 1; i < inProgressAt.size(); i++) {
      assertThat(Duration.ofNanos(inProgressAt.get(i) - inProgressAt.get(i - 1)))
          .isGreaterThanOrEqualTo(backoff.dividedBy(2));
    }

    // The other worker gives up (a retryable failure): the next delivery runs it, once.
    store().fail(k1, holder.token(), "the holder gave up", Instant.now(), Duration.ofHours(1));
    Await.until("handled and settled", () -> effects.count("e1") == 1 && Broker.allSettled(t));
    assertThat(effects.counts()).isEqualTo(Map.of("e1", 1));
    assertThat(handledAtDelivery).singleElement().satisfies(d -> assertThat(d).isGreaterThan(3));
  }

  @Test
  void aMessageWithoutKeyIsDeadLetteredAndTerminated() throws Exception {
    Topology t = topology("nokey", LONG_ACK_WAIT, DEFAULT_WINDOW);
    Subscription terminated = terminations(t);
    PublishAck anonymous = Broker.publish(t.subject(), "anonymous");
    Broker.publish(t.subject(), "e1", "Nats-Msg-Id", "k1");
    start(consumer(once(), t, this::effect));

    Await.until("settled", () -> Broker.allSettled(t) && Broker.messages(t.deadLetterStream()) == 1);
    assertThat(effects.counts()).isEqualTo(Map.of("e1", 1));
    MessageInfo letter = Broker.deadLetters(t).get(0);
    assertThat(Broker.text(letter.getData())).isEqualTo("anonymous");
    assertThat(header(letter, DeadLetterHeaders.REASON)).isEqualTo("NO_KEY");
    assertThat(header(letter, DeadLetterHeaders.IDEMPOTENCY_KEY)).isNull();
    assertThat(header(letter, DeadLetterHeaders.ATTEMPTS)).isEqualTo("0");
    assertThat(terminatedSequences(terminated, 1)).containsExactly(anonymous.getSeqno());
  }

  @Test
  void aKeyReusedWithAnotherPayloadIsDeadLettered() {
    Topology t = topology("reused", LONG_ACK_WAIT, DEFAULT_WINDOW);
    Broker.publish(t.subject(), "e1", "Idempotency-Key", "k1");
    Broker.publish(t.subject(), "something else", "Idempotency-Key", "k1");
    start(consumer(once(), t, this::effect).key(KeyDerivation.header("Idempotency-Key")));

    Await.until("settled", () -> Broker.allSettled(t) && Broker.messages(t.deadLetterStream()) == 1);
    assertThat(effects.counts()).isEqualTo(Map.of("e1", 1));
    MessageInfo letter = Broker.deadLetters(t).get(0);
    assertThat(Broker.text(letter.getData())).isEqualTo("something else");
    assertThat(header(letter, DeadLetterHeaders.REASON))
        .isEqualTo(DeadLetter.Reason.KEY_REUSED.name());
    assertThat(header(letter, "Idempotency-Key")).isEqualTo("k1");
  }

  @Test
  void closingMidBatchNaksTheRestForAnotherConsumerAtOnce() throws Exception {
    Topology t = topology("stop", LONG_ACK_WAIT, DEFAULT_WINDOW);
    for (int i = 0; i < 10; i++) {
      Broker.publish(t.subject(), "e" + i, "Nats-Msg-Id", "k" + i);
    }
    CountDownLatch reached = new CountDownLatch(1);
    CountDownLatch resume = new CountDownLatch(1);
    IdempotentNatsConsumer first = consumer(once(), t, (message, attempt) -> {
      effect(message, attempt);
      if (Broker.text(message.getData()).equals("e4") && reached.getCount() > 0) {
        reached.countDown();
        resume.await();
      }
    }).batchSize(10).build();
    consumers.add(first);
    threads.submit(first);
    assertThat(reached.await(30, TimeUnit.SECONDS)).isTrue();
    Thread closer = new Thread(first::close, "closer");
    closer.start();
    // close() asks the loop to stop, then waits for it: once it waits, the stop is asked.
    Await.until("close() waiting for the loop",
        () -> closer.getState() == Thread.State.TIMED_WAITING);
    resume.countDown();
    closer.join(Await.DEFAULT.toMillis());
    assertThat(closer.isAlive()).isFalse();

    // e0..e4 acked; e5..e9 nak'd without delay and their claims released: with an AckWait of
    // 30 s, only the naks let another consumer have them well before it.
    assertThat(effects.counts()).hasSize(5);
    start(consumer(once(), t, this::effect));
    Await.until("all settled", Duration.ofSeconds(20),
        () -> Broker.allSettled(t) && effects.counts().size() == 10,
        () -> effects.counts() + " " + Broker.info(t));
    assertThat(effects.counts()).allSatisfy((event, n) -> assertThat(n).isOne());
  }

  // ---------------------------------------------------------------------------------------------

  /** Blocks in its first message until released. */
  final class SlowHandler implements MessageHandler<Message> {
    final CountDownLatch started = new CountDownLatch(1);
    final CountDownLatch release = new CountDownLatch(1);

    @Override
    public void handle(Message message, Attempt attempt) throws Exception {
      effect(message, attempt);
      started.countDown();
      assertThat(release.await(60, TimeUnit.SECONDS)).isTrue();
    }
  }

  Topology topology(String name, Duration ackWait, Duration duplicateWindow) {
    Topology t = Broker.create(name, ackWait, duplicateWindow);
    topologies.add(t);
    return t;
  }

  Once once() {
    return Once.builder(store()).lease(LEASE).build();
  }

  /** A {@code Once} that counts the messages it finds in progress elsewhere. */
  Once onceCounting(AtomicInteger inProgress) {
    return Once.builder(store()).lease(LEASE).listener(new OnceListener() {
      @Override
      public void onInProgress(IdempotencyKey key) {
        inProgress.incrementAndGet();
      }
    }).build();
  }

  /** A consumer of {@code t} on a connection of its own, with short backoffs. */
  IdempotentNatsConsumer.Builder consumer(Once once, Topology t,
      MessageHandler<Message> handler) {
    Connection connection = Broker.connect();
    connections.add(connection);
    return IdempotentNatsConsumer.builder(once, handler)
        .connection(connection)
        .stream(t.stream())
        .consumer(t.consumer())
        .config(RETRIES);
  }

  /** Short backoffs, so a test's retries take milliseconds. */
  static final BatchConfig RETRIES = BatchConfig.builder()
      .retryBackoff(Duration.ofMillis(20), Duration.ofMillis(100))
      .inProgressBackoff(Duration.ofMillis(100)).build();

  Future<?> start(IdempotentNatsConsumer.Builder builder) {
    IdempotentNatsConsumer consumer = builder.build();
    consumers.add(consumer);
    return threads.submit(consumer);
  }

  void effect(Message message, Attempt attempt) {
    effects.record(Broker.text(message.getData()));
  }

  static String header(MessageInfo message, String name) {
    Headers headers = message.getHeaders();
    return headers == null ? null : headers.getLast(name);
  }

  /** Listens for JetStream's advisories of messages terminated by {@code t}'s consumer. */
  static Subscription terminations(Topology t) throws Exception {
    Subscription sub = Broker.ADMIN.subscribe("$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED."
        + t.stream() + "." + t.consumer());
    Broker.ADMIN.flush(Duration.ofSeconds(5));
    return sub;
  }

  /** The stream sequences of the next {@code n} terminated messages. */
  static List<Long> terminatedSequences(Subscription sub, int n) throws InterruptedException {
    List<Long> out = new ArrayList<>();
    while (out.size() < n) {
      Message advisory = sub.nextMessage(Await.DEFAULT);
      if (advisory == null) {
        throw new AssertionError("no termination advisory within " + Await.DEFAULT);
      }
      Matcher m = STREAM_SEQ.matcher(Broker.text(advisory.getData()));
      assertThat(m.find()).isTrue();
      out.add(Long.parseLong(m.group(1)));
    }
    return out;
  }

  /** A failure no retry can fix. */
  static final class PoisonException extends Exception {
    private static final long serialVersionUID = 1L;

    PoisonException(String message) {
      super(message);
    }
  }
}
