package dev.once;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.spi.ClaimRequest;
import dev.once.spi.IdempotencyStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Coalescing left to the store: {@code Once.Builder.coalesceStoreCalls} not called, Once takes
 * {@link IdempotencyStore#defaultCoalescing}, asked when it is built and, while the store does
 * not know yet (-1), on every call until it does; an explicit setting replaces it.
 */
class DefaultCoalescingTest {

  private static final Fingerprint FP = Fingerprint.of("request");

  /**
   * An in-memory store that suggests a coalescing, counts how often it is asked and what it is
   * asked to batch, and can hold one key's claim until told to go on. It has an asynchronous
   * claim of its own (a proxy declares every method), so Once would claim through it at once.
   */
  private static final class SuggestingStore {
    private final IntSupplier suggestion;
    final AtomicInteger asked = new AtomicInteger();
    final AtomicInteger asyncClaims = new AtomicInteger();
    final List<List<ClaimRequest>> batches = new CopyOnWriteArrayList<>();
    final List<Duration> batchLockWaits = new CopyOnWriteArrayList<>();
    final List<String> claimedAlone = new CopyOnWriteArrayList<>();
    final CountDownLatch heldEntered = new CountDownLatch(1);
    final CountDownLatch release = new CountDownLatch(1);
    final IdempotencyStore store = OnceAsyncTest.overriding(new InMemoryStore(), this::answer);

    SuggestingStore(IntSupplier suggestion) {
      this.suggestion = suggestion;
    }

    @SuppressWarnings("unchecked")
    private Object answer(String method, Object[] args) {
      switch (method) {
        case "defaultCoalescing":
          asked.incrementAndGet();
          return suggestion.getAsInt();
        case "claim":
          String key = ((ClaimRequest) args[0]).key().key();
          claimedAlone.add(key);
          if (key.equals("held")) {
            heldEntered.countDown();
            await(release);
          }
          break;
        case "claimAsync":
          asyncClaims.incrementAndGet();
          break;
        case "claimAll":
          batches.add(List.copyOf((List<ClaimRequest>) args[0]));
          batchLockWaits.add(args.length > 1 ? (Duration) args[1] : null);
          break;
        default:
          break;
      }
      return OnceAsyncTest.FORWARD;
    }
  }

  private static void await(CountDownLatch latch) {
    try {
      if (!latch.await(30, TimeUnit.SECONDS)) {
        throw new AssertionError("not released in 30 s");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }

  private static String call(Once once, String key) {
    return once.execute(IdempotencyKey.of("orders", key), FP, Codecs.utf8(), a -> "done " + key);
  }

  /**
   * One caller holds the store's only call alone ("held", its claim held in the store); two more
   * arrive while it is held, and the answer is what they did: queued and batched together once
   * "held" went on, or claimed alone at once. The ticker stands still, so no escape.
   */
  private static List<Thread> heldAndTwoMore(Once once, SuggestingStore store,
      List<String> answers) throws InterruptedException {
    Thread held = new Thread(() -> answers.add(call(once, "held")));
    held.start();
    await(store.heldEntered);
    List<Thread> more = new ArrayList<>();
    for (String key : List.of("b", "c")) {
      Thread t = new Thread(() -> answers.add(call(once, key)));
      more.add(t);
      t.start();
    }
    // Both either queue in Once (parked in the coalescer) or reach the store's claim.
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (!more.stream().allMatch(t -> queuedInOnce(t) || !t.isAlive())
        && store.claimedAlone.size() < 3) {
      assertThat(System.nanoTime()).as("b and c neither queued nor claimed").isLessThan(deadline);
      Thread.onSpinWait();
    }
    store.release.countDown();
    List<Thread> all = new ArrayList<>(more);
    all.add(held);
    for (Thread t : all) {
      t.join(TimeUnit.SECONDS.toMillis(30));
      assertThat(t.isAlive()).as(t + " still waiting").isFalse();
    }
    return all;
  }

  private static boolean queuedInOnce(Thread t) {
    Thread.State state = t.getState();
    return (state == Thread.State.WAITING || state == Thread.State.TIMED_WAITING)
        && Arrays.stream(t.getStackTrace())
            .anyMatch(f -> f.getClassName().endsWith(".Coalescer"));
  }

  @Test
  void callersBeyondWhatTheStoreSuggestsShareABatchWithoutCoalesceStoreCallsBeingCalled()
      throws Exception {
    SuggestingStore store = new SuggestingStore(() -> 1);
    Once once = Once.builder(store.store).ticker(() -> 0L).build();
    List<String> answers = new CopyOnWriteArrayList<>();

    heldAndTwoMore(once, store, answers);

    assertThat(answers).containsExactlyInAnyOrder("done held", "done b", "done c");
    assertThat(store.claimedAlone).as("claims made alone").containsExactly("held");
    assertThat(store.batches).hasSize(1);
    assertThat(store.batches.get(0)).extracting(r -> r.key().key())
        .containsExactlyInAnyOrder("b", "c");
    assertThat(store.batchLockWaits).as("a coalesced batch claim's bound on a held row")
        .containsExactly(Duration.ofMillis(50));
    assertThat(once.config().coalescedCallsInFlight()).as("left to the store").isEqualTo(-1);
  }

  @Test
  void coalesceStoreCallsZeroTurnsOffWhatTheStoreSuggests() throws Exception {
    SuggestingStore store = new SuggestingStore(() -> 1);
    Once once = Once.builder(store.store).ticker(() -> 0L).coalesceStoreCalls(0).build();
    List<String> answers = new CopyOnWriteArrayList<>();

    heldAndTwoMore(once, store, answers);

    assertThat(answers).containsExactlyInAnyOrder("done held", "done b", "done c");
    assertThat(store.claimedAlone).as("b and c claimed while held was held")
        .containsExactlyInAnyOrder("held", "b", "c");
    assertThat(store.batches).isEmpty();
    assertThat(store.asked).as("an explicit setting does not ask the store").hasValue(0);
  }

  @Test
  void aStoreThatSuggestsNothingLeavesEveryCallAlone() throws Exception {
    SuggestingStore store = new SuggestingStore(() -> 0);
    Once once = Once.builder(store.store).ticker(() -> 0L).build();
    List<String> answers = new CopyOnWriteArrayList<>();

    heldAndTwoMore(once, store, answers);

    assertThat(store.claimedAlone).containsExactlyInAnyOrder("held", "b", "c");
    assertThat(store.batches).isEmpty();
    assertThat(store.asked).hasValue(1);
  }

  @Test
  void theStoreIsAskedWhenOnceIsBuiltAndItsAnswerKept() {
    SuggestingStore store = new SuggestingStore(() -> 8);
    Once once = Once.builder(store.store).build();
    assertThat(store.asked).as("asked when built: it answers without its server").hasValue(1);

    for (int i = 0; i < 10; i++) {
      assertThat(call(once, "k" + i)).isEqualTo("done k" + i);
    }

    assertThat(store.asked).hasValue(1);
  }

  /**
   * A store that does not know yet (a JDBC store before it has detected its database) answers -1:
   * its calls go alone and each claim asks again, until it knows. Storing an outcome never asks:
   * nothing the store answers there may stand between the work and its outcome.
   */
  @Test
  void aStoreThatDoesNotKnowYetLeavesItsCallsAloneAndIsAskedAgainUntilItKnows()
      throws Exception {
    AtomicInteger answers = new AtomicInteger();
    SuggestingStore store = new SuggestingStore(
        () -> answers.getAndIncrement() < 2 ? -1 : 1);
    Once once = Once.builder(store.store).ticker(() -> 0L).build();

    assertThat(call(once, "first")).isEqualTo("done first");
    assertThat(store.claimedAlone).containsExactly("first");
    assertThat(store.asked).as("when built and for the claim, not for the completion")
        .hasValue(2);

    List<String> later = new CopyOnWriteArrayList<>();
    heldAndTwoMore(once, store, later);

    assertThat(store.asked).as("the answer, once known, is kept").hasValue(3);
    assertThat(store.batches).as("the answer taken").hasSize(1);
    assertThat(later).containsExactlyInAnyOrder("done held", "done b", "done c");
  }

  /**
   * A store that breaks the contract (its answer throws, an Error too, or is a negative number
   * other than -1) is taken as suggesting no coalescing, once: asking it again would cost every
   * call. (A JDBC store reading its pool's size met a NoClassDefFoundError from a DataSource with
   * an optional dependency missing: found by review, where it failed every call after the work.)
   */
  @ParameterizedTest(name = "its answer: {0}")
  @ValueSource(strings = {"throws", "throws an Error", "-2"})
  void aStoreWhoseSuggestionIsNotANumberOfCallsIsLeftAlone(String answer) throws Exception {
    SuggestingStore store = new SuggestingStore(() -> {
      if (answer.equals("throws")) {
        throw new IllegalStateException("a store's bug");
      }
      if (answer.equals("throws an Error")) {
        throw new NoClassDefFoundError("com/example/pool/Registry");
      }
      return Integer.parseInt(answer);
    });
    Once once = Once.builder(store.store).ticker(() -> 0L).build();
    List<String> answers = new CopyOnWriteArrayList<>();

    heldAndTwoMore(once, store, answers);

    assertThat(answers).containsExactlyInAnyOrder("done held", "done b", "done c");
    assertThat(store.claimedAlone).containsExactlyInAnyOrder("held", "b", "c");
    assertThat(store.batches).isEmpty();
    assertThat(store.asked).hasValue(1);
  }

  /**
   * A store with an asynchronous claim of its own that suggests coalescing: an asynchronous call
   * claims through the coalescer, on the executor (a shared batch call blocks), not through it.
   */
  @Test
  void anAsynchronousCallOnAStoreThatSuggestsCoalescingClaimsThroughTheCoalescer()
      throws Exception {
    SuggestingStore store = new SuggestingStore(() -> 8);
    Once once = Once.builder(store.store).asyncExecutor(
        java.util.concurrent.ForkJoinPool.commonPool()).build();

    CompletableFuture<String> answer = once.executeAsync(IdempotencyKey.of("orders", "async"), FP,
        Codecs.utf8(), a -> CompletableFuture.completedFuture("done async"));

    assertThat(answer.get(30, TimeUnit.SECONDS)).isEqualTo("done async");
    assertThat(store.asyncClaims).hasValue(0);
    assertThat(store.claimedAlone).containsExactly("async");
  }

  /**
   * A store with an asynchronous claim of its own is still claimed through it: asking it does not
   * send the call to the executor's blocking path.
   */
  @Test
  void anAsynchronousCallOnAStoreThatSuggestsNothingClaimsThroughItsOwnAsynchronousClaim()
      throws Exception {
    SuggestingStore store = new SuggestingStore(() -> 0);
    Once once = Once.builder(store.store).asyncExecutor(
        java.util.concurrent.ForkJoinPool.commonPool()).build();

    CompletableFuture<String> answer = once.executeAsync(IdempotencyKey.of("orders", "async"), FP,
        Codecs.utf8(), a -> CompletableFuture.completedFuture("done async"));

    assertThat(answer.get(30, TimeUnit.SECONDS)).isEqualTo("done async");
    assertThat(store.asyncClaims).hasValue(1);
    assertThat(store.asked).hasValue(1);
  }
}
