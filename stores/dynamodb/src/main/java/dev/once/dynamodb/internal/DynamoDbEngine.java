package dev.once.dynamodb.internal;

import static dev.once.dynamodb.internal.RecordItems.b;
import static dev.once.dynamodb.internal.RecordItems.n;
import static dev.once.dynamodb.internal.RecordItems.s;

import dev.once.Checkpoint;
import dev.once.IdempotencyKey;
import dev.once.LeaseLostException;
import dev.once.PayloadTooLargeException;
import dev.once.StoreUnavailableException;
import dev.once.dynamodb.internal.Expressions.Statement;
import dev.once.dynamodb.internal.Expressions.Values;
import dev.once.support.Checks;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.ClaimRules;
import dev.once.spi.EpochMicros;
import dev.once.spi.HeldClaim;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.Outcome;
import dev.once.spi.Status;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Predicate;
import software.amazon.awssdk.services.dynamodb.DynamoDbAsyncClient;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;
import software.amazon.awssdk.services.dynamodb.model.ConditionalCheckFailedException;
import software.amazon.awssdk.services.dynamodb.model.DeleteItemRequest;
import software.amazon.awssdk.services.dynamodb.model.GetItemResponse;
import software.amazon.awssdk.services.dynamodb.model.ReturnValuesOnConditionCheckFailure;
import software.amazon.awssdk.services.dynamodb.model.ScanRequest;
import software.amazon.awssdk.services.dynamodb.model.ScanResponse;
import software.amazon.awssdk.services.dynamodb.model.UpdateItemRequest;

/** What {@code DynamoDbStore} does, request by request. Thread-safe. */
public final class DynamoDbEngine {

  /** DynamoDB's item size limit: 400 KB, attribute names and values together. */
  public static final int ITEM_SIZE_LIMIT = 400 * 1024;
  /** Longest {@code last_error} kept; longer messages are cut (Once itself sends at most 1000). */
  public static final int MAX_ERROR_CHARS = 4096;
  /** Items a Scan page evaluates (a page also stops at 1 MB). */
  static final int SCAN_PAGE = 1000;
  /** Conflicts a fail or extend survives while recomputing its expiry. */
  private static final int MAX_WRITE_ROUNDS = 8;

  static final String OWNED = "#token = :token AND #status = :in_progress";
  static final String COMPLETE_UPDATE = "SET #status = :completed, #outcome_kind = :kind,"
      + " #outcome_media_type = :media_type, #outcome_body = :body, #updated_at = :now,"
      + " #expires_at = :expires_at, #ttl = :ttl";
  // fail keeps the record until the later of now + retention and the lease end.
  static final String FAIL_CONDITION = OWNED + " AND #lease_until <= :expires_at";
  static final String FAIL_UPDATE = "SET #status = :failed, #last_error = :error,"
      + " #updated_at = :now, #expires_at = :expires_at, #ttl = :ttl";
  // release is fail with one attempt fewer (an IN_PROGRESS record has at least one).
  static final String RELEASE_UPDATE = FAIL_UPDATE + ", #attempts = #attempts - :one";
  // extend pushes the expiry only when the new lease would outlive it.
  static final String EXTEND_CONDITION = OWNED + " AND #expires_at >= :lease_until";
  static final String EXTEND_UPDATE = "SET #lease_until = :lease_until, #updated_at = :now";
  static final String EXTEND_PUSH_CONDITION = OWNED + " AND #expires_at < :lease_until";
  static final String EXTEND_PUSH_UPDATE = "SET #lease_until = :lease_until, #updated_at = :now,"
      + " #expires_at = :lease_until, #ttl = :ttl";
  static final String CHECKPOINT_UPDATE = "SET #checkpoint_name = :name,"
      + " #checkpoint_data = :data, #updated_at = :now";
  static final String REAP_FILTER = "#status = :in_progress AND #lease_until <= :now";
  static final String REAP_CONDITION = "#token = :token AND " + REAP_FILTER;
  static final String REAP_UPDATE = "SET #status = :failed, #last_error = :error,"
      + " #updated_at = :now";
  static final String PURGE_FILTER = "#expires_at <= :now";
  static final String PURGE_CONDITION = "#token = :token AND " + PURGE_FILTER;
  static final String SCAN_PROJECTION = "#key, #token";

  private final DynamoDbClient client;
  private final DynamoDbAsyncClient asyncClient;
  private final int claimAllConcurrency;
  private final String table;
  private final AttributeNames names;
  private final RecordItems items;
  private final ClaimProtocol protocol;
  private final int maxPayloadBytes;
  private final Statement complete;
  private final Statement failure;
  private final Statement release;
  private final Statement extend;
  private final Statement extendPush;
  private final Statement checkpoint;
  private final Statement reap;
  private final Statement purge;
  private final Statement reapScan;
  private final Statement purgeScan;

  /**
   * @param asyncClient         for {@link #claimAll}, or null to claim a batch one by one
   * @param claimAllConcurrency how many keys of a batch are claimed at once on {@code asyncClient}
   */
  public DynamoDbEngine(DynamoDbClient client, DynamoDbAsyncClient asyncClient,
      int claimAllConcurrency, String table, AttributeNames names, int maxPayloadBytes) {
    this.client = client;
    this.asyncClient = asyncClient;
    this.claimAllConcurrency = claimAllConcurrency;
    this.table = table;
    this.names = names;
    this.items = new RecordItems(names, table);
    this.protocol = new ClaimProtocol(table, names, items);
    this.maxPayloadBytes = maxPayloadBytes;
    this.complete = Statement.of(names, OWNED, COMPLETE_UPDATE);
    this.failure = Statement.of(names, FAIL_CONDITION, FAIL_UPDATE);
    this.release = Statement.of(names, FAIL_CONDITION, RELEASE_UPDATE);
    this.extend = Statement.of(names, EXTEND_CONDITION, EXTEND_UPDATE);
    this.extendPush = Statement.of(names, EXTEND_PUSH_CONDITION, EXTEND_PUSH_UPDATE);
    this.checkpoint = Statement.of(names, OWNED, CHECKPOINT_UPDATE);
    this.reap = Statement.of(names, REAP_CONDITION, REAP_UPDATE);
    this.purge = Statement.of(names, PURGE_CONDITION, null);
    // A scan's filter and projection (in the condition and update slots).
    this.reapScan = Statement.of(names, REAP_FILTER, SCAN_PROJECTION);
    this.purgeScan = Statement.of(names, PURGE_FILTER, SCAN_PROJECTION);
  }

  // --- claims ------------------------------------------------------------------------------------

  public Claim claim(ClaimRequest request) {
    Objects.requireNonNull(request, "request");
    // The synchronous client completes each future before returning it: this runs on the caller.
    CompletableFuture<Claim> claim = protocol.claim(request,
        r -> CompletableFuture.completedFuture(client.updateItem(r)));
    return join(claim, "claim of " + request.key());
  }

  /**
   * {@link #claim} on the asynchronous client, never blocking: the same protocol, its failures
   * mapped as {@code claim} maps them. Only with an asynchronous client ({@link #hasAsyncClient}).
   */
  public CompletableFuture<Claim> claimAsync(ClaimRequest request) {
    Objects.requireNonNull(request, "request");
    return protocol.claim(request, asyncClient::updateItem).handle((claim, error) -> {
      if (error != null) {
        throw Errors.map(error, table, "claim of " + request.key());
      }
      return claim;
    });
  }

  /**
   * Whether {@link #claimAsync} and {@link #completeAsync} may be called: the engine has an
   * asynchronous client.
   */
  public boolean hasAsyncClient() {
    return asyncClient != null;
  }

  /**
   * Claims a batch: keys in parallel on the asynchronous client, at most
   * {@code claimAllConcurrency} in flight; the requests for one key in order, each after the
   * previous one's answer. DynamoDB has no conditional batch write, so this is one conditional
   * write per request, overlapped.
   *
   * <p>All or nothing for the caller: when a claim fails, no further key is started, the claims
   * already in flight are awaited, and every claim the batch acquired is released with
   * {@link #fail} (FAILED: the next claim retries it at once) before the failure is thrown,
   * wherever in the batch it happened. A claim whose own failure may have been applied (its answer
   * was lost) is looked up and released too if the record is IN_PROGRESS under its claim id.
   */
  public List<Claim> claimAll(List<ClaimRequest> requests) {
    Objects.requireNonNull(requests, "requests");
    requests.forEach(r -> Objects.requireNonNull(r, "request"));
    if (requests.isEmpty()) {
      return List.of();
    }
    Map<IdempotencyKey, List<Integer>> byKey = new LinkedHashMap<>();
    for (int i = 0; i < requests.size(); i++) {
      byKey.computeIfAbsent(requests.get(i).key(), k -> new ArrayList<>()).add(i);
    }
    List<List<Integer>> groups = new ArrayList<>(byKey.values());
    Claim[] answers = new Claim[requests.size()];
    Throwable[] errors = new Throwable[requests.size()];
    AtomicReference<Throwable> failure = new AtomicReference<>();
    if (asyncClient == null || groups.size() == 1) {
      for (int i = 0; i < requests.size() && failure.get() == null; i++) {
        try {
          answers[i] = claim(requests.get(i));
        } catch (RuntimeException e) {
          errors[i] = e;
          failure.set(e);
        }
      }
    } else {
      AtomicInteger nextGroup = new AtomicInteger();
      List<CompletableFuture<Void>> workers = new ArrayList<>();
      for (int w = 0; w < Math.min(claimAllConcurrency, groups.size()); w++) {
        workers.add(claimGroups(requests, groups, nextGroup, answers, errors, failure));
      }
      // Every worker ends normally (errors are recorded), after its claim in flight answered.
      CompletableFuture.allOf(workers.toArray(CompletableFuture[]::new)).join();
    }
    if (failure.get() != null) {
      throw releaseAll(requests, answers, errors, failure.get());
    }
    return Arrays.asList(answers);
  }

  /** One worker: takes the next key's requests, claims them in order, repeats until a failure. */
  private CompletableFuture<Void> claimGroups(List<ClaimRequest> requests,
      List<List<Integer>> groups, AtomicInteger nextGroup, Claim[] answers, Throwable[] errors,
      AtomicReference<Throwable> failure) {
    if (failure.get() != null) {
      return CompletableFuture.completedFuture(null);
    }
    int group = nextGroup.getAndIncrement();
    if (group >= groups.size()) {
      return CompletableFuture.completedFuture(null);
    }
    CompletableFuture<Void> chain = CompletableFuture.completedFuture(null);
    for (int index : groups.get(group)) {
      chain = chain.thenCompose(v -> protocol.claim(requests.get(index), asyncClient::updateItem)
          .handle((claim, error) -> {
            if (error != null) {
              errors[index] = Errors.unwrap(error);
              throw new CompletionException(errors[index]);
            }
            answers[index] = claim;
            return null;
          }));
    }
    return chain.handle((v, error) -> {
      if (error != null) {
        failure.compareAndSet(null, Errors.unwrap(error));
      }
      return null;
    }).thenCompose(v -> claimGroups(requests, groups, nextGroup, answers, errors, failure));
  }

  /**
   * Releases what a failed batch acquired and returns the exception to throw. The errors of other
   * keys whose writes may have been applied (the reason the exception says so) and the release
   * failures are added to it as suppressed: such a record stays IN_PROGRESS until its lease ends.
   */
  private RuntimeException releaseAll(List<ClaimRequest> requests, Claim[] answers,
      Throwable[] errors, Throwable failure) {
    String reason = "claimAll failed: " + failure;
    List<Throwable> releaseFailures = new ArrayList<>();
    List<Throwable> maybeApplied = new ArrayList<>();
    boolean changed = false;
    for (int i = 0; i < answers.length; i++) {
      ClaimRequest r = requests.get(i);
      try {
        if (answers[i] instanceof Claim.Acquired acquired) {
          changed = true;
          release(r.key(), acquired.token(), reason, r.now(), r.retention());
        } else if (errors[i] != null && Errors.mayHaveBeenApplied(errors[i])) {
          changed = true;
          if (errors[i] != failure) {
            // Another key's write may have landed: its error says why the batch's may have.
            maybeApplied.add(errors[i]);
          }
          Optional<IdempotencyRecord> found = find(r.key());
          if (found.isPresent() && ClaimRules.isOwnClaim(found.get(), r)) {
            release(r.key(), found.get().token(), reason, r.now(), r.retention());
          }
        }
      } catch (RuntimeException e) {
        releaseFailures.add(e);
      }
    }
    RuntimeException thrown = Errors.map(failure, table, "claimAll",
        changed || Errors.mayHaveBeenApplied(failure));
    if (changed && thrown instanceof StoreUnavailableException u && !u.mayHaveBeenApplied()) {
      // Claims of this batch were written (and released): the call changed records.
      thrown = new StoreUnavailableException(u.getMessage()
          + "; the claims this batch had acquired were released", u, true);
    }
    maybeApplied.forEach(thrown::addSuppressed);
    releaseFailures.forEach(thrown::addSuppressed);
    return thrown;
  }

  // --- writes under the token --------------------------------------------------------------------

  public void complete(IdempotencyKey key, long token, Outcome outcome, Instant now,
      Duration retention) {
    UpdateItemRequest request = completion(key, token, outcome, now, retention);
    try {
      client.updateItem(request);
    } catch (RuntimeException e) {
      completionFailed(e, key, token, outcome, true);
    }
  }

  /**
   * {@link #complete} on the asynchronous client, never blocking: the same write, its failures
   * mapped as {@code complete} maps them. Only with an asynchronous client
   * ({@link #hasAsyncClient}).
   */
  public CompletableFuture<Void> completeAsync(IdempotencyKey key, long token, Outcome outcome,
      Instant now, Duration retention) {
    UpdateItemRequest request;
    try {
      request = completion(key, token, outcome, now, retention);
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
    return asyncClient.updateItem(request).handle((updated, error) -> {
      if (error != null) {
        // On the SDK's thread: no read for the message's item size.
        completionFailed(error, key, token, outcome, false);
      }
      return null;
    });
  }

  /** The conditional write of a completion, its arguments checked first. */
  private UpdateItemRequest completion(IdempotencyKey key, long token, Outcome outcome,
      Instant now, Duration retention) {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(outcome, "outcome");
    Objects.requireNonNull(now, "now");
    Checks.positive(retention, "retention");
    if (outcome.size() > maxPayloadBytes) {
      throw new PayloadTooLargeException("outcome of " + key, outcome.size(), maxPayloadBytes);
    }
    long expiresAt = EpochMicros.plus(now, retention);
    Values values = owned(token)
        .put(":completed", s(Status.COMPLETED.name()))
        .put(":kind", s(outcome.kind().name()))
        .put(":media_type", s(outcome.mediaType()))
        .put(":body", b(outcome.body()))
        .put(":now", n(EpochMicros.of(now)))
        .put(":expires_at", n(expiresAt))
        .put(":ttl", n(Ttl.seconds(expiresAt)));
    return update(key, complete, values, true);
  }

  /**
   * After a completion's write failed with {@code error}: returns if this very completion was
   * applied before, else throws what {@link #complete} throws ({@code mayRead}: the item is read
   * for the size a too-large outcome's message gives).
   */
  private void completionFailed(Throwable error, IdempotencyKey key, long token,
      Outcome outcome, boolean mayRead) {
    Throwable e = Errors.unwrap(error);
    if (e instanceof ConditionalCheckFailedException refused) {
      // Acknowledged if this very completion was applied before (an SDK retry whose first answer
      // was lost, or the caller repeating it): decided from the item the failure returned.
      if (!oldRecordIs(refused, r -> r.isCompletedAs(token, outcome))) {
        throw new LeaseLostException(key, token);
      }
      return;
    }
    if (Errors.isItemTooLarge(e)) {
      throw new PayloadTooLargeException("the record of " + key + " with this outcome (the"
          + " checkpoint and the other attributes included)",
          mayRead ? itemSizeWith(key, outcome) : outcome.size() + outcome.mediaType().length(),
          ITEM_SIZE_LIMIT);
    }
    throw Errors.map(e, table, "complete of " + key);
  }

  public void fail(IdempotencyKey key, long token, String error, Instant now,
      Duration retention) {
    fail("fail of ", failure, key, token, error, now, retention);
  }

  /** As {@link #fail}, one attempt fewer: the work of the claim released never ran. */
  public void release(IdempotencyKey key, long token, String reason, Instant now,
      Duration retention) {
    fail("release of ", release, key, token, reason, now, retention);
  }

  private void fail(String operation, Statement statement, IdempotencyKey key, long token,
      String error, Instant now, Duration retention) {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(error, "error");
    Objects.requireNonNull(now, "now");
    Checks.positive(retention, "retention");
    String kept = error.length() > MAX_ERROR_CHARS ? error.substring(0, MAX_ERROR_CHARS) : error;
    long expiresAt = EpochMicros.plus(now, retention);
    for (int round = 0; round < MAX_WRITE_ROUNDS; round++) {
      Values values = owned(token)
          .put(":failed", s(Status.FAILED.name()))
          .put(":error", s(kept))
          .put(":now", n(EpochMicros.of(now)))
          .put(":expires_at", n(expiresAt))
          .put(":ttl", n(Ttl.seconds(expiresAt)));
      if (statement == release) {
        values.put(":one", n(1));
      }
      try {
        client.updateItem(update(key, statement, values, true));
        return;
      } catch (ConditionalCheckFailedException e) {
        Map<String, AttributeValue> old = ownedItem(e, token);
        if (old == null) {
          if (oldRecordIs(e, r -> r.isFailedAs(token, kept))) {
            return; // this very failure, applied before: acknowledged
          }
          throw new LeaseLostException(key, token);
        }
        // The lease outlives now + retention: keep the record until the lease ends.
        expiresAt = Math.max(EpochMicros.plus(now, retention), items.number(old,
            Attribute.LEASE_UNTIL));
      } catch (RuntimeException e) {
        throw Errors.map(e, table, operation + key);
      }
    }
    throw new StoreUnavailableException(operation + key + " kept conflicting", null, false);
  }

  public Instant extend(IdempotencyKey key, long token, Instant now, Duration lease) {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(now, "now");
    Checks.positive(lease, "lease");
    long leaseUntil = EpochMicros.plus(now, lease);
    boolean push = false;
    for (int round = 0; round < MAX_WRITE_ROUNDS; round++) {
      Values values = owned(token)
          .put(":lease_until", n(leaseUntil))
          .put(":now", n(EpochMicros.of(now)));
      if (push) {
        values.put(":ttl", n(Ttl.seconds(leaseUntil)));
      }
      try {
        client.updateItem(update(key, push ? extendPush : extend, values, true));
        return EpochMicros.toInstant(leaseUntil);
      } catch (ConditionalCheckFailedException e) {
        Map<String, AttributeValue> old = ownedItem(e, token);
        if (old == null) {
          throw new LeaseLostException(key, token);
        }
        push = items.number(old, Attribute.EXPIRES_AT) < leaseUntil;
      } catch (RuntimeException e) {
        throw Errors.map(e, table, "extend of " + key);
      }
    }
    throw new StoreUnavailableException("extend of " + key + " kept conflicting", null, false);
  }

  /**
   * Extends a batch heartbeat's leases: conditional updates in parallel on the asynchronous client
   * (at most the claimAll concurrency at once), one by one without it.
   *
   * @return the keys no longer IN_PROGRESS under their claim's token, in request order
   */
  public Set<IdempotencyKey> extendAll(List<HeldClaim> claims, Instant now, Duration lease) {
    Objects.requireNonNull(claims, "claims");
    Objects.requireNonNull(now, "now");
    Checks.positive(lease, "lease");
    boolean[] lost = new boolean[claims.size()];
    if (asyncClient == null || claims.size() == 1) {
      for (int i = 0; i < claims.size(); i++) {
        try {
          extend(claims.get(i).key(), claims.get(i).token(), now, lease);
        } catch (LeaseLostException e) {
          lost[i] = true;
        }
      }
    } else {
      long leaseUntil = EpochMicros.plus(now, lease);
      AtomicInteger next = new AtomicInteger();
      AtomicReference<Throwable> failure = new AtomicReference<>();
      List<CompletableFuture<Void>> workers = new ArrayList<>();
      for (int w = 0; w < Math.min(claimAllConcurrency, claims.size()); w++) {
        workers.add(extendNext(claims, next, lost, failure, now, leaseUntil));
      }
      CompletableFuture.allOf(workers.toArray(CompletableFuture[]::new)).join();
      if (failure.get() != null) {
        throw Errors.map(failure.get(), table, "extendAll of " + claims.size() + " keys");
      }
    }
    Set<IdempotencyKey> out = new LinkedHashSet<>();
    for (int i = 0; i < lost.length; i++) {
      if (lost[i]) {
        out.add(claims.get(i).key());
      }
    }
    return out;
  }

  /** One worker of extendAll: extends the next claim, repeats until none is left or one fails. */
  private CompletableFuture<Void> extendNext(List<HeldClaim> claims, AtomicInteger next,
      boolean[] lost, AtomicReference<Throwable> failure, Instant now, long leaseUntil) {
    int i = next.getAndIncrement();
    if (i >= claims.size() || failure.get() != null) {
      return CompletableFuture.completedFuture(null);
    }
    HeldClaim claim = claims.get(i);
    return extendAsync(claim, now, leaseUntil, false, 0).handle((extended, error) -> {
      if (error != null) {
        failure.compareAndSet(null, Errors.unwrap(error));
      } else {
        lost[i] = !extended;
      }
      return null;
    }).thenCompose(v -> extendNext(claims, next, lost, failure, now, leaseUntil));
  }

  /** As {@link #extend}, asynchronously: true when extended, false when the lease is lost. */
  private CompletableFuture<Boolean> extendAsync(HeldClaim claim, Instant now, long leaseUntil,
      boolean push, int round) {
    if (round >= MAX_WRITE_ROUNDS) {
      return CompletableFuture.failedFuture(new StoreUnavailableException("extend of "
          + claim.key() + " kept conflicting", null, false));
    }
    Values values = owned(claim.token())
        .put(":lease_until", n(leaseUntil))
        .put(":now", n(EpochMicros.of(now)));
    if (push) {
      values.put(":ttl", n(Ttl.seconds(leaseUntil)));
    }
    return asyncClient.updateItem(update(claim.key(), push ? extendPush : extend, values, true))
        .handle((response, error) -> {
          if (error == null) {
            return CompletableFuture.completedFuture(true);
          }
          if (Errors.unwrap(error) instanceof ConditionalCheckFailedException e) {
            Map<String, AttributeValue> old = ownedItem(e, claim.token());
            if (old == null) {
              return CompletableFuture.completedFuture(false);
            }
            return extendAsync(claim, now, leaseUntil,
                items.number(old, Attribute.EXPIRES_AT) < leaseUntil, round + 1);
          }
          return CompletableFuture.<Boolean>failedFuture(Errors.unwrap(error));
        }).thenCompose(f -> f);
  }

  public void checkpoint(IdempotencyKey key, long token, Checkpoint checkpoint, Instant now) {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(checkpoint, "checkpoint");
    Objects.requireNonNull(now, "now");
    if (checkpoint.size() > maxPayloadBytes) {
      throw new PayloadTooLargeException("checkpoint " + checkpoint.name() + " of " + key,
          checkpoint.size(), maxPayloadBytes);
    }
    Values values = owned(token)
        .put(":name", s(checkpoint.name()))
        .put(":data", b(checkpoint.data()))
        .put(":now", n(EpochMicros.of(now)));
    try {
      client.updateItem(update(key, this.checkpoint, values, false));
    } catch (ConditionalCheckFailedException e) {
      throw new LeaseLostException(key, token);
    } catch (RuntimeException e) {
      if (Errors.isItemTooLarge(e)) {
        throw new PayloadTooLargeException("the record of " + key + " with checkpoint "
            + checkpoint.name(), checkpoint.size(), ITEM_SIZE_LIMIT);
      }
      throw Errors.map(e, table, "checkpoint of " + key);
    }
  }

  // --- reads and maintenance ---------------------------------------------------------------------

  public Optional<IdempotencyRecord> find(IdempotencyKey key) {
    Objects.requireNonNull(key, "key");
    Map<String, AttributeValue> item = getItem(key);
    return item == null ? Optional.empty() : Optional.of(items.decode(item));
  }

  /**
   * Deletes expired records found by a Scan (filter {@code expires_at <= now}), each with a
   * DeleteItem conditioned on the token and expiry just read, so a record claimed again meanwhile
   * stays. Reads the table page by page until {@code limit} records are deleted or the table ends.
   */
  public int purgeExpired(Instant now, int limit) {
    Objects.requireNonNull(now, "now");
    Checks.positive(limit, "limit");
    long nowMicros = EpochMicros.of(now);
    return scanAndApply(purgeScan, nowMicros, limit, item -> {
      Values values = new Values()
          .put(":token", item.get(names.get(Attribute.TOKEN)))
          .put(":now", n(nowMicros));
      client.deleteItem(DeleteItemRequest.builder()
          .tableName(table)
          .key(Map.of(names.get(Attribute.KEY), item.get(names.get(Attribute.KEY))))
          .conditionExpression(purge.condition())
          .expressionAttributeNames(purge.names())
          .expressionAttributeValues(values.map())
          .build());
    }, "purgeExpired");
  }

  /**
   * Turns IN_PROGRESS records whose lease ended into FAILED ("lease expired"), found by a Scan and
   * each changed by an UpdateItem conditioned on the token, status and lease just read.
   */
  public int reapExpiredLeases(Instant now, int limit) {
    Objects.requireNonNull(now, "now");
    Checks.positive(limit, "limit");
    long nowMicros = EpochMicros.of(now);
    return scanAndApply(reapScan, nowMicros, limit, item -> {
      Values values = new Values()
          .put(":token", item.get(names.get(Attribute.TOKEN)))
          .put(":in_progress", s(Status.IN_PROGRESS.name()))
          .put(":failed", s(Status.FAILED.name()))
          .put(":error", s("lease expired"))
          .put(":now", n(nowMicros));
      client.updateItem(UpdateItemRequest.builder()
          .tableName(table)
          .key(Map.of(names.get(Attribute.KEY), item.get(names.get(Attribute.KEY))))
          .conditionExpression(reap.condition())
          .updateExpression(reap.update())
          .expressionAttributeNames(reap.names())
          .expressionAttributeValues(values.map())
          .build());
    }, "reapExpiredLeases");
  }

  private int scanAndApply(Statement scan, long nowMicros, int limit,
      java.util.function.Consumer<Map<String, AttributeValue>> change, String operation) {
    Values values = new Values().put(":now", n(nowMicros));
    if (scan == reapScan) { // the reap filter also asks for IN_PROGRESS
      values.put(":in_progress", s(Status.IN_PROGRESS.name()));
    }
    int changed = 0;
    boolean writing = false;
    Map<String, AttributeValue> start = null;
    try {
      do {
        writing = false;
        ScanResponse page = client.scan(ScanRequest.builder()
            .tableName(table)
            .consistentRead(true)
            .filterExpression(scan.condition())
            .projectionExpression(scan.update())
            .expressionAttributeNames(scan.names())
            .expressionAttributeValues(values.map())
            .limit(SCAN_PAGE)
            .exclusiveStartKey(start)
            .build());
        for (Map<String, AttributeValue> item : page.items()) {
          if (changed >= limit) {
            return changed;
          }
          try {
            writing = true;
            change.accept(item);
            changed++;
          } catch (ConditionalCheckFailedException e) {
            // Claimed or changed since the scan read it: not ours to touch any more.
          }
        }
        start = page.hasLastEvaluatedKey() && !page.lastEvaluatedKey().isEmpty()
            ? page.lastEvaluatedKey() : null;
      } while (start != null && changed < limit);
    } catch (RuntimeException e) {
      // Records changed before the failure stay changed; a failed Scan itself wrote nothing.
      throw Errors.map(e, table, operation,
          changed > 0 || (writing && Errors.mayHaveBeenApplied(e)));
    }
    return changed;
  }

  // --- helpers -----------------------------------------------------------------------------------

  private Map<String, AttributeValue> getItem(IdempotencyKey key) {
    try {
      GetItemResponse response = client.getItem(r -> r.tableName(table)
          .key(items.primaryKey(key)).consistentRead(true));
      return response.hasItem() && !response.item().isEmpty() ? response.item() : null;
    } catch (RuntimeException e) {
      throw Errors.mapRead(e, table, "read of " + key);
    }
  }

  private static Values owned(long token) {
    return new Values()
        .put(":token", n(token))
        .put(":in_progress", s(Status.IN_PROGRESS.name()));
  }

  /** The record a failed write returned, if {@code token} still owns it; else null. */
  private Map<String, AttributeValue> ownedItem(ConditionalCheckFailedException e, long token) {
    Map<String, AttributeValue> old = e.hasItem() ? e.item() : Map.of();
    if (old.isEmpty()) {
      return null;
    }
    AttributeValue status = old.get(names.get(Attribute.STATUS));
    boolean owned = items.number(old, Attribute.TOKEN) == token && status != null
        && Status.IN_PROGRESS.name().equals(status.s());
    return owned ? old : null;
  }

  /**
   * Whether the item a failed write returned ({@code ReturnValuesOnConditionCheckFailure=ALL_OLD})
   * is a record {@code test} accepts; false for no item or one that is not a Once record.
   */
  private boolean oldRecordIs(ConditionalCheckFailedException e,
      Predicate<IdempotencyRecord> test) {
    if (!e.hasItem() || e.item().isEmpty()) {
      return false;
    }
    try {
      return test.test(items.decode(e.item()));
    } catch (IllegalStateException | IllegalArgumentException notARecord) {
      return false;
    }
  }

  private UpdateItemRequest update(IdempotencyKey key, Statement statement, Values values,
      boolean returnOld) {
    UpdateItemRequest.Builder b = UpdateItemRequest.builder()
        .tableName(table)
        .key(items.primaryKey(key))
        .conditionExpression(statement.condition())
        .updateExpression(statement.update())
        .expressionAttributeNames(statement.names())
        .expressionAttributeValues(values.map());
    if (returnOld) {
      b.returnValuesOnConditionCheckFailure(ReturnValuesOnConditionCheckFailure.ALL_OLD);
    }
    return b.build();
  }

  /** The size the item of {@code key} would have with {@code outcome}, for an error message. */
  private int itemSizeWith(IdempotencyKey key, Outcome outcome) {
    int size = outcome.size() + outcome.mediaType().length();
    try {
      Map<String, AttributeValue> item = getItem(key);
      if (item != null) {
        size += ItemSize.of(item);
      }
    } catch (RuntimeException e) {
      // Only for the message.
    }
    return size;
  }

  private <T> T join(CompletableFuture<T> future, String operation) {
    try {
      return future.join();
    } catch (RuntimeException e) {
      throw Errors.map(e, table, operation);
    }
  }
}
