package dev.once.kafka.internal;

import dev.once.Codecs;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.InvalidKeyException;
import dev.once.KeyReusedException;
import dev.once.LeaseLostException;
import dev.once.Once;
import dev.once.OnceListener;
import dev.once.ReplayedFailureException;
import dev.once.internal.AttemptImpl;
import dev.once.internal.Execution;
import dev.once.internal.StoreCalls;
import dev.once.kafka.BatchResult;
import dev.once.kafka.DeadLetter;
import dev.once.kafka.NoKeyPolicy;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.Completion;
import dev.once.spi.Outcome;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

/**
 * The heart of the idempotent consumer: one batch claim, the handler for each acquired record in
 * partition order, and the offsets that may be committed. Not API.
 *
 * <p>Per partition, records are handled in order until the first one whose outcome is not final;
 * the claims acquired for the records after it are released (FAILED, so the next delivery retakes
 * them at once) and the partition is read again from that record.
 *
 * <p>With batch claims, the outcomes of the records whose handler returned are stored together by
 * one {@code completeAll} after the last handler of the batch, and only then are the offsets to
 * commit decided: a record whose completion was not stored (lease lost, store error) is not final,
 * and its partition is read again from it.
 *
 * <p>Every claim is under a live lease until its outcome is stored or it is released, including
 * the claims of records waiting their turn in the batch: one heartbeat ({@link Leases}) extends
 * all of them when the {@code Once} has a heartbeat scheduler, and each record's lease is checked
 * (extended when less than a third is left) just before its handler runs, so a record whose claim
 * another worker took over in the meantime is not run.
 *
 * <p>Nothing after a handler returns makes it run again: an outcome that could not be stored
 * because the store failed is kept here ({@code unstored}), its claim still held and extended, and
 * stored again at the next heartbeat or batch, before its record is handled again; a redelivery
 * of that record stores the kept outcome instead of running the handler.
 */
public final class BatchProcessor<K, V> {

  private static final System.Logger LOG = System.getLogger(BatchProcessor.class.getName());

  private final Once.Config config;
  /** The store, each call told to the listener (onStoreCall) as Once's own calls are. */
  private final StoreCalls store;
  private final Settings<K, V> settings;
  private final Outcome emptyOutcome;
  /** Failures of records processed without a key, counted in memory (there is no record). */
  private final Map<RecordId, Integer> unprotectedAttempts = new ConcurrentHashMap<>();
  /** The claims held (acquired, not yet stored or released) and their heartbeat. */
  private final Leases leases;
  /**
   * Outcomes of handlers that returned but that the store failed to take, by key: their claims
   * stay held (and extended) until a later try stores them. Shared by the threads of the consumer.
   */
  private final Map<IdempotencyKey, Unstored> unstored = new ConcurrentHashMap<>();
  /** One retry of the unstored outcomes at a time (the heartbeat and the batches both retry). */
  private final Object storingUnstored = new Object();

  public BatchProcessor(Once once, Settings<K, V> settings) {
    this.config = once.config();
    this.store = new StoreCalls(config.store(), config.listener());
    this.settings = settings;
    this.emptyOutcome = Outcome.encode(Codecs.none(), null, Integer.MAX_VALUE, "a record");
    this.leases = new Leases(config, this::storeUnstored);
  }

  public Settings<K, V> settings() {
    return settings;
  }

  public Instant now() {
    return config.clock().instant();
  }

  /**
   * Processes {@code records} (in the order a poll returns them: grouped by partition, each
   * partition in offset order).
   *
   * @param scope the scope of the idempotency keys
   * @param stop  asked between records: true to stop, releasing the claims not yet run
   */
  public BatchResult process(List<ConsumerRecord<K, V>> records, String scope,
      BooleanSupplier stop) {
    Batch batch = new Batch();
    if (records.isEmpty()) {
      return batch.result();
    }
    // Outcomes an earlier batch could not store come first: a redelivery of their records is
    // then a replay, not a second run.
    storeUnstored();
    try {
      return process(records, scope, stop, batch);
    } finally {
      // Whatever happened, no claim of this batch stays held unless its outcome is kept unstored.
      for (AttemptImpl attempt : batch.attempts) {
        Unstored kept = unstored.get(attempt.idempotencyKey());
        if (kept == null || kept.attempt != attempt) {
          leases.drop(attempt);
        }
      }
    }
  }

  private BatchResult process(List<ConsumerRecord<K, V>> records, String scope,
      BooleanSupplier stop, Batch batch) {
    Map<TopicPartition, List<Integer>> byPartition = new LinkedHashMap<>();
    for (int i = 0; i < records.size(); i++) {
      ConsumerRecord<K, V> r = records.get(i);
      byPartition.computeIfAbsent(new TopicPartition(r.topic(), r.partition()),
          tp -> new ArrayList<>()).add(i);
    }

    Item[] items = new Item[records.size()];
    Claim[] claims = new Claim[records.size()];
    AttemptImpl[] attempts = new AttemptImpl[records.size()];
    List<ClaimRequest> requests = new ArrayList<>();
    List<Integer> requestIndex = new ArrayList<>();
    Instant now = now();
    for (List<Integer> indexes : byPartition.values()) {
      for (int i : indexes) {
        items[i] = identify(records.get(i), scope);
        if (items[i].key != null && settings.batchClaims()) {
          requests.add(request(items[i], now));
          requestIndex.add(i);
        }
      }
    }

    if (!requests.isEmpty()) {
      List<Claim> answers;
      try {
        // The point of the batch: one store round trip for every key of the poll.
        answers = store.claimAll(requests);
      } catch (RuntimeException e) {
        LOG.log(System.Logger.Level.WARNING, "batch claim of " + requests.size()
            + " records failed; the batch will be read again", e);
        Instant retryAt = now.plus(settings.initialBackoff());
        byPartition.forEach((tp, indexes) -> batch.unfinished(tp, indexes.get(0),
            records.get(indexes.get(0)).offset(), retryAt));
        batch.unfinished += records.size() - 1;
        return batch.result();
      }
      if (answers.size() != requests.size()) {
        throw new IllegalStateException("the store answered " + answers.size() + " claims to "
            + requests.size() + " requests");
      }
      for (int j = 0; j < answers.size(); j++) {
        int i = requestIndex.get(j);
        claims[i] = answers.get(j);
        if (claims[i] instanceof Claim.Acquired acquired) {
          // Held from now on, not from when its handler starts: a record waiting its turn keeps
          // its lease while the records before it are handled.
          attempts[i] = hold(items[i].key, acquired, batch);
        }
      }
    }

    // Keys acquired earlier in this batch: true once final (or awaiting its completion). A later
    // duplicate in the same batch was answered InProgress (by our own claim) and follows the fate
    // of the first.
    Map<IdempotencyKey, Boolean> ownedHere = new HashMap<>();
    Step[] steps = new Step[records.size()];
    boolean stopping = false;
    try {
      for (Map.Entry<TopicPartition, List<Integer>> partition : byPartition.entrySet()) {
        TopicPartition tp = partition.getKey();
        boolean blocked = false;
        for (int i : partition.getValue()) {
          ConsumerRecord<K, V> r = records.get(i);
          if (!blocked && !stopping && stop.getAsBoolean()) {
            stopping = true;
          }
          if (blocked || stopping) {
            if (attempts[i] != null) {
              letGo(attempts[i], stopping ? "released unprocessed: the consumer stopped"
                  : "released unprocessed: an earlier record of the partition is not final");
            }
            if (!blocked) {
              batch.unfinished(tp, i, r.offset(), now());
              blocked = true;
            } else {
              batch.unfinished++;
            }
            continue;
          }
          Step step = handle(r, items[i], claims[i], attempts[i], ownedHere, batch);
          steps[i] = step;
          if (step.retryAt != null) {
            batch.unfinished(tp, i, r.offset(), step.retryAt);
            blocked = true;
          }
        }
      }
    } catch (Error fatal) {
      // The process is going down (see run): the outcomes of the records already handled are
      // stored first, as they would have been one by one; nothing is committed or kept.
      storePending(batch, false);
      throw fatal;
    }
    Set<IdempotencyKey> notStored = storePending(batch, true);
    settle(records, byPartition, steps, notStored, batch);
    return batch.result();
  }

  /**
   * Stores the outcomes awaiting completion with one {@code completeAll}. When the store fails,
   * the outcomes are kept ({@code keep}) with their claims held, to be stored before their records
   * run again.
   *
   * @return the keys whose outcome was not stored (lease lost, or the store failed)
   */
  private Set<IdempotencyKey> storePending(Batch batch, boolean keep) {
    if (batch.pending.isEmpty()) {
      return Set.of();
    }
    List<Completion> completions = new ArrayList<>(batch.pending.size());
    for (Pending p : batch.pending.values()) {
      leases.drop(p.attempt); // no beat may extend a record while it is being completed
      completions.add(new Completion(p.key(), p.token(), p.outcome));
    }
    Set<IdempotencyKey> notStored;
    try {
      // The point of the batch, again: one store round trip for every outcome of the poll.
      Set<IdempotencyKey> lost = store.completeAll(completions, now(), config.retention());
      for (IdempotencyKey key : lost) {
        Pending p = batch.pending.get(key);
        notify(l -> l.onLeaseLost(key, p.token()));
        LOG.log(System.Logger.Level.WARNING, "lease on {0} was lost before completion: another"
            + " worker took over; the record will be read again", key);
      }
      notStored = lost;
    } catch (RuntimeException e) {
      notStored = batch.pending.keySet();
      if (!keep) {
        LOG.log(System.Logger.Level.WARNING, "could not store the outcomes of "
            + completions.size() + " records", e);
        return notStored;
      }
      // The handlers returned: their work must not run again because the store failed now. The
      // outcomes stay here with their claims held (extended by the heartbeat, if any) and are
      // stored before these records are handled again (storeUnstored).
      LOG.log(System.Logger.Level.WARNING, "could not store the outcomes of "
          + completions.size() + " records; they are kept with their claims and stored again"
          + " before their records are handled again", e);
      for (Pending p : batch.pending.values()) {
        keep(p.attempt, p.outcome, p.started);
      }
      return notStored;
    }
    for (Pending p : batch.pending.values()) {
      if (!notStored.contains(p.key())) {
        Duration elapsed = Duration.ofNanos(System.nanoTime() - p.started);
        notify(l -> l.onCompleted(p.key(), p.token(), elapsed));
      }
    }
    return notStored;
  }

  /** Keeps the outcome of {@code attempt}, whose storing failed, with its claim held. */
  private void keep(AttemptImpl attempt, Outcome outcome, long started) {
    unstored.put(attempt.idempotencyKey(), new Unstored(attempt, outcome, started));
    leases.hold(attempt);
  }

  /**
   * Tries again to store the kept outcomes, with one {@code completeAll}; called before each batch
   * and at each heartbeat. Those stored, or refused because another worker took the key over, are
   * forgotten; the others stay kept (and held) for the next try.
   */
  private void storeUnstored() {
    if (unstored.isEmpty()) {
      return;
    }
    synchronized (storingUnstored) {
      List<Unstored> kept = List.copyOf(unstored.values());
      if (kept.isEmpty()) {
        return;
      }
      List<Completion> completions = new ArrayList<>(kept.size());
      for (Unstored u : kept) {
        leases.drop(u.attempt); // as in storePending: no beat while it is being completed
        completions.add(new Completion(u.key(), u.attempt.token(), u.outcome));
      }
      Set<IdempotencyKey> lost;
      try {
        lost = store.completeAll(completions, now(), config.retention());
      } catch (RuntimeException e) {
        LOG.log(System.Logger.Level.WARNING, "still cannot store the outcomes of " + kept.size()
            + " records; trying again at the next heartbeat or batch", e);
        for (Unstored u : kept) {
          if (unstored.get(u.key()) == u) {
            leases.hold(u.attempt);
          }
        }
        return;
      }
      for (Unstored u : kept) {
        unstored.remove(u.key(), u);
        if (lost.contains(u.key())) {
          // Taken over after the lease passed (no heartbeat, or a long outage), or stored by the
          // call that failed: either way the key's record now says what happened.
          LOG.log(System.Logger.Level.INFO, "kept outcome of {0} not stored: the record is no"
              + " longer in progress under token {1}", u.key(), u.attempt.token());
        } else {
          long token = u.attempt.token();
          Duration elapsed = Duration.ofNanos(System.nanoTime() - u.started);
          notify(l -> l.onCompleted(u.key(), token, elapsed));
        }
      }
    }
  }

  /**
   * Decides, per partition, the final prefix to commit once the outcomes are stored, and counts
   * what the batch came to. A record awaiting a completion that was not stored becomes the
   * partition's first unfinished record: it and every record after it are read again (those whose
   * outcome was stored then replay).
   */
  private void settle(List<ConsumerRecord<K, V>> records,
      Map<TopicPartition, List<Integer>> byPartition, Step[] steps,
      Set<IdempotencyKey> notStored, Batch batch) {
    for (Map.Entry<TopicPartition, List<Integer>> partition : byPartition.entrySet()) {
      TopicPartition tp = partition.getKey();
      boolean broken = false;
      for (int i : partition.getValue()) {
        Step step = steps[i];
        if (step == null || step.retryAt != null) {
          break; // counted as unfinished already, as is everything after it
        }
        if (broken) {
          batch.unfinished++;
          continue;
        }
        if (step.awaiting != null && notStored.contains(step.awaiting)) {
          batch.unfinished(tp, i, records.get(i).offset(),
              now().plus(settings.initialBackoff()));
          broken = true;
          continue;
        }
        batch.count(step.counts);
        if (step.counts == Counts.REPLAYED && step.awaiting != null) {
          notify(l -> l.onReplayed(step.awaiting));
        }
        batch.commits.put(tp, new OffsetAndMetadata(records.get(i).offset() + 1));
      }
    }
  }

  // ---------------------------------------------------------------------------------------------

  private Item identify(ConsumerRecord<K, V> r, String scope) {
    String raw;
    try {
      raw = settings.keys().keyOf(r);
    } catch (RuntimeException e) {
      return Item.none(e);
    }
    if (raw == null) {
      return Item.none(new InvalidKeyException("no idempotency key: the derivation found none"));
    }
    try {
      IdempotencyKey key = IdempotencyKey.of(scope, raw);
      Fingerprint fingerprint = settings.fingerprint().apply(r);
      if (fingerprint == null) {
        throw new IllegalStateException("the fingerprint function returned null");
      }
      return new Item(key, fingerprint, null);
    } catch (RuntimeException e) {
      return Item.none(e);
    }
  }

  private ClaimRequest request(Item item, Instant now) {
    return new ClaimRequest(item.key, item.fingerprint, now, config.storedLease(),
        config.retention());
  }

  private Step handle(ConsumerRecord<K, V> r, Item item, Claim claim, AttemptImpl attempt,
      Map<IdempotencyKey, Boolean> ownedHere, Batch batch) {
    if (item.key == null) {
      return withoutKey(r, item.noKeyCause, batch);
    }
    if (claim == null) {
      try {
        claim = store.claim(request(item, now()));
      } catch (RuntimeException e) {
        LOG.log(System.Logger.Level.WARNING, "claim of " + item.key + " failed; retrying later", e);
        return Step.retryAt(now().plus(settings.initialBackoff()));
      }
      if (claim instanceof Claim.Acquired acquired) {
        attempt = hold(item.key, acquired, batch);
      }
    }
    IdempotencyKey key = item.key;
    if (claim instanceof Claim.Replay) {
      forgetUnstored(key); // stored meanwhile: nothing left to keep
      notify(l -> l.onReplayed(key));
      return Step.REPLAYED;
    }
    if (claim instanceof Claim.Mismatch) {
      notify(l -> l.onMismatch(key));
      KeyReusedException e = new KeyReusedException(key);
      return deadLetter(new DeadLetter<>(r, DeadLetter.Reason.KEY_REUSED, key.key(),
          e.getClass().getName(), e.getMessage(), 0), batch);
    }
    if (claim instanceof Claim.InProgress inProgress) {
      Boolean ownFinal = ownedHere.get(key);
      if (ownFinal != null) {
        if (ownFinal && batch.pending.containsKey(key)) {
          return Step.awaiting(key, Counts.REPLAYED);
        }
        if (ownFinal) {
          notify(l -> l.onReplayed(key));
          return Step.REPLAYED;
        }
        return Step.retryAt(now().plus(settings.initialBackoff()));
      }
      if (unstored.containsKey(key)) {
        // Our own claim: the handler returned in an earlier batch and its outcome is kept until
        // the store takes it. Not run again; read again once it is stored (then a replay).
        return Step.retryAt(now().plus(settings.initialBackoff()));
      }
      notify(l -> l.onInProgress(key));
      // Held by another consumer (typically around a rebalance): look again after a backoff, or
      // when its lease ends, where a takeover becomes possible, whichever comes first.
      Instant at = now().plus(settings.inProgressBackoff());
      return Step.retryAt(inProgress.leaseUntil().isBefore(at) ? inProgress.leaseUntil() : at);
    }
    Claim.Acquired acquired = (Claim.Acquired) claim;
    Unstored kept = unstored.remove(key);
    Step step;
    if (kept != null) {
      // The handler ran here and returned, but its outcome was not stored and its claim lapsed
      // (no heartbeat, or a long outage) before this claim retook the key: store the kept
      // outcome under the new claim instead of running the handler again.
      leases.drop(kept.attempt);
      LOG.log(System.Logger.Level.INFO, "{0} was handled already; storing its kept outcome"
          + " instead of running it again", key);
      step = returned(key, attempt, kept.outcome, kept.started, batch);
    } else {
      step = run(r, key, acquired, attempt, batch);
    }
    ownedHere.put(key, step.retryAt == null);
    return step;
  }

  /** Holds the claim of {@code key} from now until its outcome is stored or it is released. */
  private AttemptImpl hold(IdempotencyKey key, Claim.Acquired acquired, Batch batch) {
    AttemptImpl attempt = new AttemptImpl(key, acquired, config, store);
    leases.hold(attempt);
    batch.attempts.add(attempt);
    return attempt;
  }

  /** Forgets a kept outcome of {@code key} whose record was completed meanwhile. */
  private void forgetUnstored(IdempotencyKey key) {
    Unstored kept = unstored.remove(key);
    if (kept != null) {
      leases.drop(kept.attempt);
    }
  }

  private Step run(ConsumerRecord<K, V> r, IdempotencyKey key, Claim.Acquired acquired,
      AttemptImpl attempt, Batch batch) {
    long token = acquired.token();
    notify(l -> l.onAcquired(key, token, acquired.takeover()));
    try {
      // The claim was taken with the batch and the records before this one may have been slow:
      // make sure it is still ours, and start the handler with at least a third of the lease
      // ahead (extended, under the token, when less is left).
      attempt.ensureLease();
    } catch (LeaseLostException e) {
      leases.drop(attempt);
      notify(l -> l.onLeaseLost(key, token));
      LOG.log(System.Logger.Level.WARNING, "lease on {0} was lost while the record waited its"
          + " turn: another worker took over; not run here, the record will be read again", key);
      return Step.retryAt(now().plus(settings.initialBackoff()));
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.WARNING, "could not extend the lease on " + key
          + " before running it; not run, the record will be read again", e);
      letGo(attempt, "released unprocessed: its lease could not be extended");
      return Step.retryAt(now().plus(settings.initialBackoff()));
    }
    long started = System.nanoTime();
    try {
      settings.handler().handle(r, attempt);
    } catch (Exception failure) {
      leases.drop(attempt);
      return failed(r, key, acquired, attempt, failure, batch);
    } catch (Error fatal) {
      // The process is going down: record nothing, as a killed process could not either. The
      // lease runs out and the next owner of the partition takes over.
      leases.drop(attempt);
      throw fatal;
    }
    ReplayedFailureException committed = attempt.committedFailure();
    if (committed != null) {
      // An earlier attempt began compensating a terminal failure of the steps: it ends so.
      leases.drop(attempt);
      return failed(r, key, acquired, attempt, committed, batch);
    }
    return returned(key, attempt, emptyOutcome, started, batch);
  }

  /** The handler returned: its outcome is stored with the batch, or at once, or kept. */
  private Step returned(IdempotencyKey key, AttemptImpl attempt, Outcome outcome, long started,
      Batch batch) {
    if (settings.batchClaims()) {
      // Stored with the rest of the batch (storePending); the claim stays held until then.
      batch.pending.put(key, new Pending(attempt, outcome, started));
      return Step.awaiting(key, Counts.HANDLED);
    }
    long token = attempt.token();
    leases.drop(attempt);
    try {
      store.complete(key, token, outcome, now(), config.retention());
    } catch (LeaseLostException e) {
      notify(l -> l.onLeaseLost(key, token));
      LOG.log(System.Logger.Level.WARNING, "lease on {0} was lost before completion: another"
          + " worker took over; the record will be read again", key);
      return Step.retryAt(now().plus(settings.initialBackoff()));
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.WARNING, "could not store the outcome of " + key
          + "; kept with its claim, stored before the record is handled again", e);
      keep(attempt, outcome, started);
      return Step.retryAt(now().plus(settings.initialBackoff()));
    }
    Duration elapsed = Duration.ofNanos(System.nanoTime() - started);
    notify(l -> l.onCompleted(key, token, elapsed));
    return Step.HANDLED;
  }

  private Step failed(ConsumerRecord<K, V> r, IdempotencyKey key, Claim.Acquired acquired,
      AttemptImpl attempt, Exception failure, Batch batch) {
    long token = acquired.token();
    if (failure instanceof LeaseLostException) {
      notify(l -> l.onLeaseLost(key, token));
      return Step.retryAt(now().plus(settings.initialBackoff()));
    }
    boolean terminal = attempt.committedFailure() != null
        || config.failurePolicy().isTerminal(failure);
    boolean exhausted = !terminal && acquired.attempt() >= settings.maxAttempts();
    notify(l -> l.onFailed(key, token, failure, terminal || exhausted));
    if (!terminal && !exhausted) {
      release(key, token, describe(failure));
      return Step.retryAt(now().plus(settings.backoff(acquired.attempt())));
    }
    Outcome outcome;
    try {
      // The steps the handler completed are undone (each once) before the failure is final.
      outcome = attempt.terminalOutcome(failure);
    } catch (RuntimeException compensationFailure) {
      LOG.log(System.Logger.Level.WARNING, "compensating the failure of " + key + " failed;"
          + " released, the record will be read again", compensationFailure);
      release(key, token, "compensation failed: " + compensationFailure.getMessage());
      return Step.retryAt(now().plus(settings.backoff(acquired.attempt())));
    }
    DeadLetter<K, V> letter = new DeadLetter<>(r,
        terminal ? DeadLetter.Reason.TERMINAL_FAILURE : DeadLetter.Reason.RETRIES_EXHAUSTED,
        key.key(), failure.getClass().getName(), failure.getMessage(), acquired.attempt());
    // Dead letter first, then the stored failure: a crash in between re-runs the record after the
    // lease (the dead letter may then be published twice) but never loses it.
    if (!publish(letter)) {
      release(key, token, describe(failure));
      return Step.retryAt(now().plus(settings.backoff(acquired.attempt())));
    }
    try {
      store.complete(key, token, outcome, now(), config.retention());
    } catch (LeaseLostException e) {
      notify(l -> l.onLeaseLost(key, token));
      return Step.retryAt(now().plus(settings.initialBackoff()));
    } catch (RuntimeException e) {
      // Dead-lettered already: keep the stored failure to come, as for an outcome (above).
      LOG.log(System.Logger.Level.WARNING, "could not store the failure of " + key
          + "; kept with its claim, stored before the record is handled again", e);
      keep(attempt, outcome, System.nanoTime());
      return Step.retryAt(now().plus(settings.initialBackoff()));
    }
    return Step.DEAD_LETTERED;
  }

  private Step withoutKey(ConsumerRecord<K, V> r, RuntimeException cause, Batch batch) {
    if (settings.noKeyPolicy() == NoKeyPolicy.DEAD_LETTER) {
      LOG.log(System.Logger.Level.WARNING, "{0}-{1}@{2} has no idempotency key ({3});"
          + " dead-lettered", r.topic(), r.partition(), r.offset(), cause.getMessage());
      return deadLetter(new DeadLetter<>(r, DeadLetter.Reason.NO_KEY, null,
          cause.getClass().getName(), cause.getMessage(), 0), batch);
    }
    LOG.log(System.Logger.Level.WARNING, "{0}-{1}@{2} has no idempotency key ({3});"
        + " processed without protection", r.topic(), r.partition(), r.offset(),
        cause.getMessage());
    RecordId id = new RecordId(r.topic(), r.partition(), r.offset());
    try {
      settings.handler().handle(r, null);
    } catch (Exception failure) {
      int attempts = unprotectedAttempts.merge(id, 1, Integer::sum);
      boolean terminal = config.failurePolicy().isTerminal(failure);
      if (!terminal && attempts < settings.maxAttempts()) {
        return Step.retryAt(now().plus(settings.backoff(attempts)));
      }
      Step step = deadLetter(new DeadLetter<>(r, terminal ? DeadLetter.Reason.TERMINAL_FAILURE
          : DeadLetter.Reason.RETRIES_EXHAUSTED, null, failure.getClass().getName(),
          failure.getMessage(), attempts), batch);
      if (step.retryAt == null) {
        unprotectedAttempts.remove(id);
      }
      return step;
    }
    unprotectedAttempts.remove(id);
    return Step.HANDLED;
  }

  /** Publishes a dead letter for a record that is then final, or asks for a retry. */
  private Step deadLetter(DeadLetter<K, V> letter, Batch batch) {
    if (!publish(letter)) {
      return Step.retryAt(now().plus(settings.initialBackoff()));
    }
    return Step.DEAD_LETTERED;
  }

  /** Publishes a dead letter; false (logged) when it could not be. */
  private boolean publish(DeadLetter<K, V> letter) {
    try {
      settings.deadLetters().publish(letter);
      return true;
    } catch (Exception e) {
      if (e instanceof InterruptedException) {
        Thread.currentThread().interrupt();
      }
      LOG.log(System.Logger.Level.WARNING, "could not publish the dead letter of "
          + letter.record().topic() + "-" + letter.record().partition() + "@"
          + letter.record().offset() + "; the record will be read again", e);
      return false;
    }
  }

  /** Stops holding a claim and gives it back as FAILED, so the next delivery retakes it at once. */
  private void letGo(AttemptImpl attempt, String why) {
    leases.drop(attempt);
    release(attempt.idempotencyKey(), attempt.token(), why);
  }

  /** Gives a claim back as FAILED (retryable) so the next delivery retakes it at once. */
  private void release(IdempotencyKey key, long token, String why) {
    try {
      store.fail(key, token, why, now(), config.retention());
    } catch (RuntimeException e) {
      // The lease runs out instead; the next delivery takes over then.
      LOG.log(System.Logger.Level.DEBUG, "could not release " + key, e);
    }
  }

  private void notify(Consumer<OnceListener> event) {
    Execution.notify(config.listener(), event);
  }

  private static String describe(Throwable failure) {
    String message = failure.getMessage();
    String text = failure.getClass().getName() + (message == null ? "" : ": " + message);
    return text.length() > 1000 ? text.substring(0, 1000) : text;
  }

  // ---------------------------------------------------------------------------------------------

  /** What the batch came to, gathered while processing. */
  private static final class Batch {
    final Map<TopicPartition, OffsetAndMetadata> commits = new LinkedHashMap<>();
    final Map<TopicPartition, Long> seekTo = new LinkedHashMap<>();
    final Map<TopicPartition, Instant> retryAt = new LinkedHashMap<>();
    /** Handled records whose outcome awaits the batch's completeAll, in handling order. */
    final Map<IdempotencyKey, Pending> pending = new LinkedHashMap<>();
    /** Every claim acquired in this batch (each held until stored, released or kept). */
    final List<AttemptImpl> attempts = new ArrayList<>();
    int firstUnfinished = -1;
    int handled;
    int replayed;
    int deadLettered;
    int unfinished;

    void unfinished(TopicPartition tp, int index, long offset, Instant at) {
      seekTo.put(tp, offset);
      retryAt.put(tp, at);
      if (firstUnfinished < 0 || index < firstUnfinished) {
        firstUnfinished = index;
      }
      unfinished++;
    }

    void count(Counts counts) {
      switch (counts) {
        case HANDLED -> handled++;
        case REPLAYED -> replayed++;
        case DEAD_LETTERED -> deadLettered++;
        default -> throw new IllegalStateException("not a final count: " + counts);
      }
    }

    BatchResult result() {
      return new BatchResult(commits, seekTo, retryAt, firstUnfinished, handled, replayed,
          deadLettered, unfinished);
    }
  }

  /** A record's key and fingerprint, or why it has none. */
  private record Item(IdempotencyKey key, Fingerprint fingerprint, RuntimeException noKeyCause) {
    static Item none(RuntimeException cause) {
      return new Item(null, null, cause);
    }
  }

  /** Which count of the batch a final record adds to. */
  private enum Counts { HANDLED, REPLAYED, DEAD_LETTERED, NONE }

  /**
   * The outcome of one record: final (counted as {@code counts}); final once the outcome of
   * {@code awaiting} is stored by the batch's completeAll; or to be read again from
   * {@code retryAt}.
   */
  private record Step(Instant retryAt, IdempotencyKey awaiting, Counts counts) {
    static final Step HANDLED = new Step(null, null, Counts.HANDLED);
    static final Step REPLAYED = new Step(null, null, Counts.REPLAYED);
    static final Step DEAD_LETTERED = new Step(null, null, Counts.DEAD_LETTERED);

    static Step retryAt(Instant at) {
      return new Step(at, null, Counts.NONE);
    }

    static Step awaiting(IdempotencyKey key, Counts counts) {
      return new Step(null, key, counts);
    }
  }

  /** A handled record whose outcome is stored with the rest of the batch. */
  private record Pending(AttemptImpl attempt, Outcome outcome, long started) {
    IdempotencyKey key() {
      return attempt.idempotencyKey();
    }

    long token() {
      return attempt.token();
    }
  }

  /** An outcome the store failed to take, kept with its (held) claim until a retry stores it. */
  private record Unstored(AttemptImpl attempt, Outcome outcome, long started) {
    IdempotencyKey key() {
      return attempt.idempotencyKey();
    }
  }

  private record RecordId(String topic, int partition, long offset) {}
}
