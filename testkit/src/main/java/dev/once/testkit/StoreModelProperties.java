package dev.once.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.Checkpoint;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.LeaseLostException;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.IdempotencyStore;
import dev.once.spi.Outcome;
import dev.once.spi.Status;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import net.jqwik.api.lifecycle.AfterProperty;
import net.jqwik.api.lifecycle.BeforeProperty;

/**
 * A property test of a store against a small, independently written model of the state machine.
 * Random interleavings of claims, completions, retryable failures, checkpoints, lease extensions,
 * clock jumps, reaping and purging by several workers on a few keys — and the same claim or
 * write re-sent, as a client library does after a reconnect — must
 *
 * <ul>
 *   <li>answer every claim as the model does (so two workers never both own a live claim),
 *   <li>refuse every write from a worker whose token is stale, changing nothing,
 *   <li>replay to every duplicate exactly the first outcome stored for the key,
 *   <li>leave a record equal to the model's after every step,
 *   <li>recognise a re-sent claim as its claimant's own (Acquired, same token) and acknowledge a
 *       repeated completion or failure that was already applied,
 *   <li>decide the same through {@code claimAsync} and {@code completeAsync} (the claims and
 *       completions of every other worker go through them, as {@code Once.callAsync}'s do) as
 *       through {@code claim} and {@code complete},
 *   <li>answer a batch of claims ({@code claimAll}, a key twice in one batch included) as the
 *       same claims made one after the other.
 * </ul>
 *
 * Extend it with a store over the real server, as for {@link StoreConformanceSuite}.
 */
public abstract class StoreModelProperties {

  private static final Duration LEASE = Duration.ofSeconds(10);
  private static final Duration RETENTION = Duration.ofSeconds(60);
  private static final int WORKERS = 3;
  /**
   * The executor the asynchronous calls are given, as {@code Once.Builder.asyncExecutor}'s: a
   * thread of its own per task (a store may hand it work from its client's event loop).
   */
  private static final java.util.concurrent.Executor BLOCKING =
      java.util.concurrent.Executors.newCachedThreadPool(task -> {
        Thread thread = new Thread(task, "model-blocking");
        thread.setDaemon(true);
        return thread;
      });
  private static final int KEYS = 2;
  private static final Fingerprint[] FINGERPRINTS = {Fingerprint.of("A"), Fingerprint.of("B")};

  private IdempotencyStore store;

  /** A store over the real server; called once per property, closed after it. */
  protected abstract IdempotencyStore newStore();

  /** How many steps a run may have at most. */
  protected int maxSteps() {
    return 60;
  }

  @BeforeProperty
  void openStore() {
    store = newStore();
  }

  @AfterProperty
  void closeStore() {
    store.close();
  }

  /** One step of a run. */
  public sealed interface Step {}

  record ClaimStep(int worker, int key, int fingerprint) implements Step {}

  /**
   * Several claims sent as one {@code claimAll}, at one instant: each answered as if claimed
   * alone, in order, after the ones before it (a key twice in one batch included).
   */
  record BatchClaimStep(List<ClaimStep> claims) implements Step {}

  record CompleteStep(int worker, int key) implements Step {}

  record FailStep(int worker, int key) implements Step {}

  /** A claim given back unrun ({@link IdempotencyStore#release}): FAILED, the attempt uncounted. */
  record ReleaseStep(int worker, int key) implements Step {}

  record CheckpointStep(int worker, int key) implements Step {}

  record ExtendStep(int worker, int key) implements Step {}

  record AdvanceStep(long seconds) implements Step {}

  record ReapStep() implements Step {}

  record PurgeStep() implements Step {}

  /** The worker's last claim request sent again, byte for byte (same claim id and time). */
  record ResendClaimStep(int worker, int key) implements Step {}

  /** The worker's last completion or failure sent again, byte for byte. */
  record RepeatWriteStep(int worker, int key) implements Step {}

  @Provide
  Arbitrary<List<Step>> runs() {
    Arbitrary<Integer> worker = Arbitraries.integers().between(0, WORKERS - 1);
    Arbitrary<Integer> key = Arbitraries.integers().between(0, KEYS - 1);
    // Mostly the same request; sometimes a reused key with another body.
    Arbitrary<Integer> fingerprint = Arbitraries.integers().between(0, 9).map(i -> i == 0 ? 1 : 0);
    Arbitrary<Step> step = Arbitraries.frequencyOf(
        Tuple.of(6, Combinators.combine(worker, key, fingerprint)
            .as(ClaimStep::new)),
        Tuple.of(2, Combinators.combine(worker, key, fingerprint).as(ClaimStep::new)
            .list().ofMinSize(2).ofMaxSize(4).map(BatchClaimStep::new)),
        Tuple.of(4, Combinators.combine(worker, key)
            .as(CompleteStep::new)),
        Tuple.of(2, Combinators.combine(worker, key).as(FailStep::new)),
        Tuple.of(1, Combinators.combine(worker, key).as(ReleaseStep::new)),
        Tuple.of(2, Combinators.combine(worker, key)
            .as(CheckpointStep::new)),
        Tuple.of(1, Combinators.combine(worker, key)
            .as(ExtendStep::new)),
        Tuple.of(3, Arbitraries.of(1L, 5L, 9L, 10L, 11L, 30L, 60L, 61L)
            .map(AdvanceStep::new)),
        Tuple.of(1, Arbitraries.just(new ReapStep())),
        Tuple.of(1, Arbitraries.just(new PurgeStep())),
        Tuple.of(2, Combinators.combine(worker, key).as(ResendClaimStep::new)),
        Tuple.of(2, Combinators.combine(worker, key).as(RepeatWriteStep::new)));
    return step.list().ofMinSize(1).ofMaxSize(maxSteps());
  }

  @Property(tries = 300)
  void storeBehavesAsTheModel(@ForAll("runs") List<Step> run) {
    new Run().play(run);
  }

  /** The model's view of one key. */
  private static final class ModelRecord {
    Status status;
    int fingerprint;
    long token;
    Instant leaseUntil;
    Instant expiresAt;
    int attempts;
    String outcome;
    String lastError;
    String checkpoint;
    long claimId;
  }

  /**
   * A completion (outcome set), failure (error set) or release (error set, {@code release}) as a
   * worker sent it.
   */
  private record Write(long token, String outcome, String error, Instant now, boolean release) {
    Write(long token, String outcome, String error, Instant now) {
      this(token, outcome, error, now, false);
    }
  }

  /** One run: a fresh scope, a fresh clock, the model and what each worker believes it holds. */
  private final class Run {
    final ManualClock clock = new ManualClock();
    final String scope = "model." + UUID.randomUUID().toString().substring(0, 8);
    final Map<Integer, ModelRecord> model = new HashMap<>();
    final Map<Integer, String> firstOutcome = new HashMap<>();
    final long[][] held = new long[WORKERS][KEYS];
    final ClaimRequest[][] lastClaim = new ClaimRequest[WORKERS][KEYS];
    final Write[][] lastWrite = new Write[WORKERS][KEYS];

    IdempotencyKey key(int k) {
      return IdempotencyKey.of(scope, "k" + k);
    }

    void play(List<Step> run) {
      for (Step step : run) {
        apply(step);
        for (int k = 0; k < KEYS; k++) {
          checkRecord(k);
          checkOneLiveOwner(k);
        }
      }
    }

    void apply(Step step) {
      Instant now = clock.instant();
      if (step instanceof ClaimStep s) {
        claim(s, now);
      } else if (step instanceof BatchClaimStep b) {
        List<ClaimRequest> requests = new java.util.ArrayList<>();
        for (ClaimStep s : b.claims()) {
          ClaimRequest request = new ClaimRequest(key(s.key()), FINGERPRINTS[s.fingerprint()],
              now, LEASE, RETENTION);
          lastClaim[s.worker()][s.key()] = request;
          requests.add(request);
        }
        List<Claim> answers = store.claimAll(requests);
        assertThat(answers).hasSameSizeAs(requests);
        for (int i = 0; i < requests.size(); i++) {
          ClaimStep s = b.claims().get(i);
          check(s.worker(), s.key(), requests.get(i), answers.get(i));
        }
      } else if (step instanceof CompleteStep s) {
        String outcome = "w" + s.worker() + "-t" + held[s.worker()][s.key()];
        send(s.worker(), s.key(), new Write(held[s.worker()][s.key()], outcome, null, now));
      } else if (step instanceof FailStep s) {
        send(s.worker(), s.key(), new Write(held[s.worker()][s.key()], null, "boom", now));
      } else if (step instanceof ReleaseStep s) {
        send(s.worker(), s.key(), new Write(held[s.worker()][s.key()], null, "released", now,
            true));
      } else if (step instanceof RepeatWriteStep s) {
        Write w = lastWrite[s.worker()][s.key()];
        if (w != null) {
          send(s.worker(), s.key(), w);
        }
      } else if (step instanceof ResendClaimStep s) {
        ClaimRequest r = lastClaim[s.worker()][s.key()];
        // A client library re-sends within its command timeout, far less than a lease; a claim
        // re-sent later still, with its old time, could find the key purged and seed a token
        // from that old time (see ClaimRequest#claimId).
        if (r != null && now.isBefore(r.now().plus(LEASE))) {
          claim(s.worker(), s.key(), r);
        }
      } else if (step instanceof CheckpointStep s) {
        String name = "cp-w" + s.worker() + "-t" + held[s.worker()][s.key()];
        write(s.worker(), s.key(), () -> store.checkpoint(key(s.key()), held[s.worker()][s.key()],
            Checkpoint.of(name, new byte[] {1}), now), m -> m.checkpoint = name);
      } else if (step instanceof ExtendStep s) {
        write(s.worker(), s.key(), () -> store.extend(key(s.key()), held[s.worker()][s.key()], now,
            LEASE), m -> {
          m.leaseUntil = now.plus(LEASE);
          m.expiresAt = later(m.expiresAt, m.leaseUntil);
        });
      } else if (step instanceof AdvanceStep s) {
        clock.advance(Duration.ofSeconds(s.seconds()));
      } else if (step instanceof ReapStep) {
        while (store.reapExpiredLeases(now, 100) > 0) {
          // drain
        }
        model.values().forEach(m -> {
          if (m.status == Status.IN_PROGRESS && !now.isBefore(m.leaseUntil)) {
            m.status = Status.FAILED;
            m.lastError = "lease expired";
          }
        });
      } else if (step instanceof PurgeStep) {
        while (store.purgeExpired(now, 100) > 0) {
          // drain
        }
        model.values().removeIf(m -> !now.isBefore(m.expiresAt));
      }
    }

    void claim(ClaimStep s, Instant now) {
      ClaimRequest request = new ClaimRequest(key(s.key()), FINGERPRINTS[s.fingerprint()], now,
          LEASE, RETENTION);
      lastClaim[s.worker()][s.key()] = request;
      claim(s.worker(), s.key(), request);
    }

    /** Sends {@code w} (again, if it was sent before) and checks the store against the model. */
    void send(int worker, int k, Write w) {
      lastWrite[worker][k] = w;
      ModelRecord m = model.get(k);
      boolean applied = m != null && m.token == w.token() && (w.outcome() != null
          ? m.status == Status.COMPLETED && w.outcome().equals(m.outcome)
          : m.status == Status.FAILED && w.error().equals(m.lastError));
      if (applied) {
        // Already applied: acknowledged, nothing changes.
        Optional<IdempotencyRecord> before = store.find(key(k));
        writeCall(worker, k, w).run();
        assertThat(store.find(key(k))).as("a repeated write changes nothing").isEqualTo(before);
        return;
      }
      write(worker, k, w.token(), writeCall(worker, k, w), w.outcome() != null ? r -> {
        r.status = Status.COMPLETED;
        r.outcome = w.outcome();
        r.expiresAt = w.now().plus(RETENTION);
        firstOutcome.putIfAbsent(k, w.outcome());
      } : r -> {
        r.status = Status.FAILED;
        r.lastError = w.error();
        r.expiresAt = later(w.now().plus(RETENTION), r.leaseUntil);
        if (w.release()) {
          r.attempts--; // its work never ran
        }
      });
    }

    Runnable writeCall(int worker, int k, Write w) {
      // Odd workers complete as Once.callAsync does, through completeAsync.
      return w.outcome() != null && worker % 2 == 1
          ? () -> awaited(store.completeAsync(key(k), w.token(), text(w.outcome()), w.now(),
              RETENTION, BLOCKING))
          : w.outcome() != null
          ? () -> store.complete(key(k), w.token(), text(w.outcome()), w.now(), RETENTION)
          : w.release()
          ? () -> store.release(key(k), w.token(), w.error(), w.now(), RETENTION)
          : () -> store.fail(key(k), w.token(), w.error(), w.now(), RETENTION);
    }

    /** {@code claimAsync}, awaited; its failure thrown as {@code claim} would throw it. */
    Claim claimAsync(ClaimRequest request) {
      return awaited(store.claimAsync(request, BLOCKING));
    }

    /** The stage's value; its failure thrown as the blocking call would throw it. */
    <T> T awaited(java.util.concurrent.CompletionStage<T> stage) {
      try {
        return stage.toCompletableFuture().join();
      } catch (java.util.concurrent.CompletionException e) {
        throw e.getCause() instanceof RuntimeException r ? r : e;
      }
    }

    void claim(int worker, int k, ClaimRequest request) {
      Instant now = request.now();
      int fingerprint = request.fingerprint().equals(FINGERPRINTS[0]) ? 0 : 1;
      ClaimStep s = new ClaimStep(worker, k, fingerprint);
      // Odd workers claim as Once.callAsync does, through claimAsync: the same decisions.
      check(worker, k, request, worker % 2 == 1 ? claimAsync(request) : store.claim(request));
    }

    /** Checks the store's answer to {@code request} against the model, and moves the model. */
    void check(int worker, int k, ClaimRequest request, Claim claim) {
      Instant now = request.now();
      int fingerprint = request.fingerprint().equals(FINGERPRINTS[0]) ? 0 : 1;
      ClaimStep s = new ClaimStep(worker, k, fingerprint);
      ModelRecord m = model.get(s.key());
      if (m != null && now.isBefore(m.expiresAt) && m.fingerprint == fingerprint
          && m.status == Status.IN_PROGRESS && now.isBefore(m.leaseUntil)
          && m.claimId == request.claimId()) {
        // The same claim re-sent: its claimant's own, answered as the first time.
        assertThat(claim).isInstanceOf(Claim.Acquired.class);
        Claim.Acquired acquired = (Claim.Acquired) claim;
        assertThat(acquired.token()).isEqualTo(m.token);
        assertThat(acquired.leaseUntil()).isEqualTo(m.leaseUntil);
        assertThat(acquired.attempt()).isEqualTo(m.attempts);
        held[worker][k] = acquired.token();
        return;
      }
      if (m == null || !now.isBefore(m.expiresAt)) {
        ModelRecord fresh = new ModelRecord();
        // A key with no record starts at the claim time in epoch millis (see ClaimRules.firstToken).
        fresh.token = m == null ? Math.max(1, now.toEpochMilli()) : m.token + 1;
        fresh.status = Status.IN_PROGRESS;
        fresh.fingerprint = s.fingerprint();
        fresh.leaseUntil = now.plus(LEASE);
        fresh.expiresAt = now.plus(RETENTION);
        fresh.attempts = 1;
        fresh.claimId = request.claimId();
        model.put(s.key(), fresh);
        firstOutcome.remove(s.key());
        expectAcquired(claim, s, fresh, false);
      } else if (m.fingerprint != s.fingerprint()) {
        assertThat(claim).isEqualTo(new Claim.Mismatch());
      } else if (m.status == Status.COMPLETED) {
        assertThat(claim).isInstanceOf(Claim.Replay.class);
        String replayed = new String(((Claim.Replay) claim).outcome().body(), StandardCharsets.UTF_8);
        assertThat(replayed).as("every replay is the first stored outcome")
            .isEqualTo(firstOutcome.get(s.key()));
      } else if (m.status == Status.IN_PROGRESS && now.isBefore(m.leaseUntil)) {
        assertThat(claim).isEqualTo(new Claim.InProgress(m.leaseUntil));
      } else {
        boolean takeover = m.status == Status.IN_PROGRESS;
        m.token++;
        m.attempts++;
        m.status = Status.IN_PROGRESS;
        m.leaseUntil = now.plus(LEASE);
        m.expiresAt = later(m.expiresAt, now.plus(RETENTION));
        m.claimId = request.claimId();
        expectAcquired(claim, s, m, takeover);
      }
    }

    void expectAcquired(Claim claim, ClaimStep s, ModelRecord m, boolean takeover) {
      assertThat(claim).isInstanceOf(Claim.Acquired.class);
      Claim.Acquired acquired = (Claim.Acquired) claim;
      assertThat(acquired.token()).isEqualTo(m.token);
      assertThat(acquired.takeover()).isEqualTo(takeover);
      assertThat(acquired.attempt()).isEqualTo(m.attempts);
      assertThat(acquired.leaseUntil()).isEqualTo(m.leaseUntil);
      assertThat(acquired.checkpoint() == null ? null : acquired.checkpoint().name())
          .isEqualTo(m.checkpoint);
      held[s.worker()][s.key()] = acquired.token();
    }

    /** A write by {@code worker}: succeeds exactly when the model says the worker still owns the key. */
    void write(int worker, int k, Runnable call, java.util.function.Consumer<ModelRecord> effect) {
      write(worker, k, held[worker][k], call, effect);
    }

    void write(int worker, int k, long token, Runnable call,
        java.util.function.Consumer<ModelRecord> effect) {
      ModelRecord m = model.get(k);
      boolean owns = m != null && m.status == Status.IN_PROGRESS && m.token == token;
      Optional<IdempotencyRecord> before = store.find(key(k));
      try {
        call.run();
        assertThat(owns).as("store accepted a write the model refuses (stale token)").isTrue();
        effect.accept(m);
      } catch (LeaseLostException e) {
        assertThat(owns).as("store refused a write from the owner").isFalse();
        assertThat(store.find(key(k))).as("a refused write changes nothing").isEqualTo(before);
      }
    }

    void checkRecord(int k) {
      ModelRecord m = model.get(k);
      Optional<IdempotencyRecord> found = store.find(key(k));
      if (m == null) {
        assertThat(found).as("record of k%s", k).isEmpty();
        return;
      }
      assertThat(found).as("record of k%s", k).isPresent();
      IdempotencyRecord r = found.get();
      assertThat(r.status()).isEqualTo(m.status);
      assertThat(r.token()).isEqualTo(m.token);
      assertThat(r.fingerprint()).isEqualTo(FINGERPRINTS[m.fingerprint]);
      assertThat(r.leaseUntil()).isEqualTo(m.leaseUntil);
      assertThat(r.expiresAt()).isEqualTo(m.expiresAt);
      assertThat(r.attempts()).isEqualTo(m.attempts);
      assertThat(r.claimId()).as("claim id of k%s", k).isEqualTo(m.claimId);
      assertThat(r.checkpoint() == null ? null : r.checkpoint().name()).isEqualTo(m.checkpoint);
      if (m.status == Status.COMPLETED) {
        assertThat(new String(r.outcome().body(), StandardCharsets.UTF_8)).isEqualTo(m.outcome);
      }
    }

    void checkOneLiveOwner(int k) {
      Optional<IdempotencyRecord> r = store.find(key(k));
      int owners = 0;
      for (int w = 0; w < WORKERS; w++) {
        if (r.isPresent() && r.get().isLeaseLive(clock.instant()) && held[w][k] == r.get().token()) {
          owners++;
        }
      }
      assertThat(owners).as("live owners of k%s", k).isLessThanOrEqualTo(1);
    }
  }

  private static Outcome text(String s) {
    return Outcome.success("text/plain", s.getBytes(StandardCharsets.UTF_8));
  }

  private static Instant later(Instant a, Instant b) {
    return a.isAfter(b) ? a : b;
  }
}
