package dev.once.dynamodb.internal;

import static dev.once.dynamodb.internal.RecordItems.b;
import static dev.once.dynamodb.internal.RecordItems.n;
import static dev.once.dynamodb.internal.RecordItems.s;

import dev.once.StoreUnavailableException;
import dev.once.dynamodb.internal.Expressions.Statement;
import dev.once.dynamodb.internal.Expressions.Values;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.ClaimRules;
import dev.once.spi.EpochMicros;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.Status;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;
import software.amazon.awssdk.services.dynamodb.model.ConditionalCheckFailedException;
import software.amazon.awssdk.services.dynamodb.model.ReturnValue;
import software.amazon.awssdk.services.dynamodb.model.ReturnValuesOnConditionCheckFailure;
import software.amazon.awssdk.services.dynamodb.model.UpdateItemRequest;
import software.amazon.awssdk.services.dynamodb.model.UpdateItemResponse;

/**
 * The claim as conditional writes, deciding exactly as {@link ClaimRules#decide}.
 *
 * <ol>
 *   <li><b>Fresh claim</b>, one {@code UpdateItem} conditioned on {@code attribute_not_exists(key)
 *       OR expires_at <= :now}: it writes a whole new IN_PROGRESS record (removing any outcome,
 *       checkpoint or error of an expired predecessor) with {@code token = if_not_exists(token,
 *       firstToken - 1) + 1}, so a new key starts at {@link ClaimRules#firstToken} and an expired
 *       record's successor continues its token, atomically. One round trip for a new key.
 *   <li>When the condition fails, {@code ReturnValuesOnConditionCheckFailure=ALL_OLD} hands back
 *       the live record with the failure, and {@link ClaimRules#decide} answers Replay, InProgress
 *       or Mismatch from it without a second read: still one round trip for every duplicate. A
 *       record whose {@code claim_id} is the request's own and whose lease is live is this very
 *       claim, written by an earlier attempt whose answer was lost (the SDK retried the
 *       request): Acquired with the stored token, nothing written
 *       ({@link ClaimRules#isOwnLiveClaim}). The expressions need nothing for it: every write of
 *       a claim stores the request's claim id, and the decision is made here from the answer.
 *   <li>Only a FAILED record (retry) or an IN_PROGRESS one whose lease passed (takeover) needs a
 *       second write: an {@code UpdateItem} conditioned on the token and status just read (and,
 *       for a takeover, on the lease still being over), setting token + 1 and attempts + 1 and
 *       keeping the checkpoint. Whoever loses that race gets the winner's record back (ALL_OLD)
 *       and decides again: InProgress.
 * </ol>
 *
 * A PutItem would replace the item and could not continue the token of an expired record in the
 * same request; the update expression can. Each lost race means another claim changed the record,
 * so the rounds are bounded.
 *
 * <p>Written against a function from request to future so that the same code runs on the
 * synchronous client ({@link DynamoDbEngine#claim}) and on the asynchronous one
 * ({@link DynamoDbEngine#claimAll}).
 */
final class ClaimProtocol {

  /** Conflicts one claim survives; each one means another worker's write went through. */
  static final int MAX_ROUNDS = 32;

  static final String FRESH_CONDITION = "attribute_not_exists(#key) OR #expires_at <= :now";
  static final String FRESH_UPDATE = "SET #status = :in_progress, #fingerprint = :fingerprint,"
      + " #token = if_not_exists(#token, :token_base) + :one, #lease_until = :lease_until,"
      + " #attempts = :one, #claim_id = :claim_id, #created_at = :now, #updated_at = :now,"
      + " #expires_at = :expires_at, #ttl = :ttl"
      + " REMOVE #checkpoint_name, #checkpoint_data, #outcome_kind, #outcome_media_type,"
      + " #outcome_body, #last_error";
  static final String RETRY_CONDITION =
      "#token = :old_token AND #status = :failed AND #expires_at > :now";
  static final String TAKEOVER_CONDITION = "#token = :old_token AND #status = :in_progress"
      + " AND #lease_until <= :now AND #expires_at > :now";
  static final String RETAKE_UPDATE = "SET #status = :in_progress, #token = :token,"
      + " #lease_until = :lease_until, #attempts = :attempts, #claim_id = :claim_id,"
      + " #updated_at = :now, #expires_at = :expires_at, #ttl = :ttl";

  private final String table;
  private final RecordItems items;
  private final Statement fresh;
  private final Statement retry;
  private final Statement takeover;

  ClaimProtocol(String table, AttributeNames names, RecordItems items) {
    this.table = table;
    this.items = items;
    this.fresh = Statement.of(names, FRESH_CONDITION, FRESH_UPDATE);
    this.retry = Statement.of(names, RETRY_CONDITION, RETAKE_UPDATE);
    this.takeover = Statement.of(names, TAKEOVER_CONDITION, RETAKE_UPDATE);
  }

  /** Claims {@code request}, sending each write through {@code update}. */
  CompletableFuture<Claim> claim(ClaimRequest request,
      Function<UpdateItemRequest, CompletableFuture<UpdateItemResponse>> update) {
    return fresh(request, update, 0);
  }

  private CompletableFuture<Claim> fresh(ClaimRequest request,
      Function<UpdateItemRequest, CompletableFuture<UpdateItemResponse>> update, int round) {
    return send(update, freshRequest(request)).handle((response, error) -> {
      if (error == null) {
        long token = items.number(response.attributes(), Attribute.TOKEN);
        return CompletableFuture.<Claim>completedFuture(new Claim.Acquired(token, false, 1, null,
            EpochMicros.floor(request.leaseUntil())));
      }
      return conflict(request, update, round, error);
    }).thenCompose(Function.identity());
  }

  private CompletableFuture<Claim> retake(ClaimRequest request, IdempotencyRecord current,
      IdempotencyRecord next,
      Function<UpdateItemRequest, CompletableFuture<UpdateItemResponse>> update, int round) {
    boolean takeover = current.status() == Status.IN_PROGRESS;
    return send(update, retakeRequest(request, current, next)).handle((response, error) -> {
      if (error == null) {
        // ALL_NEW: the checkpoint as stored now, even if the old holder wrote one meanwhile.
        IdempotencyRecord taken = items.decode(response.attributes());
        return CompletableFuture.<Claim>completedFuture(new Claim.Acquired(taken.token(),
            takeover, taken.attempts(), taken.checkpoint(), taken.leaseUntil()));
      }
      return conflict(request, update, round, error);
    }).thenCompose(Function.identity());
  }

  /** A write's condition failed: decide on the record it returned. */
  private CompletableFuture<Claim> conflict(ClaimRequest request,
      Function<UpdateItemRequest, CompletableFuture<UpdateItemResponse>> update, int round,
      Throwable error) {
    Throwable cause = Errors.unwrap(error);
    if (!(cause instanceof ConditionalCheckFailedException failed)) {
      return CompletableFuture.failedFuture(cause);
    }
    if (round + 1 >= MAX_ROUNDS) {
      return CompletableFuture.failedFuture(new StoreUnavailableException("claim of "
          + request.key() + " lost " + MAX_ROUNDS + " races in a row on table '" + table + "'",
          cause, false));
    }
    Map<String, AttributeValue> old = failed.hasItem() ? failed.item() : Map.of();
    if (old.isEmpty()) {
      // The record vanished (purged, or deleted by TTL) between the writes: claim it as new.
      return fresh(request, update, round + 1);
    }
    IdempotencyRecord current = items.decode(old);
    if (current.isExpired(request.now())) {
      return fresh(request, update, round + 1);
    }
    ClaimRules.Decision decision = ClaimRules.decide(current, request);
    if (decision.next() == null) {
      return CompletableFuture.completedFuture(decision.claim());
    }
    return retake(request, current, decision.next(), update, round + 1);
  }

  private static CompletableFuture<UpdateItemResponse> send(
      Function<UpdateItemRequest, CompletableFuture<UpdateItemResponse>> update,
      UpdateItemRequest request) {
    try {
      return update.apply(request);
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  UpdateItemRequest freshRequest(ClaimRequest request) {
    long expiresAt = EpochMicros.of(request.expiresAt());
    Values values = new Values()
        .put(":now", n(EpochMicros.of(request.now())))
        .put(":in_progress", s(Status.IN_PROGRESS.name()))
        .put(":fingerprint", b(request.fingerprint().digest()))
        .put(":token_base", n(ClaimRules.firstToken(request.now()) - 1))
        .put(":one", n(1))
        .put(":claim_id", n(request.claimId()))
        .put(":lease_until", n(EpochMicros.of(request.leaseUntil())))
        .put(":expires_at", n(expiresAt))
        .put(":ttl", n(Ttl.seconds(expiresAt)));
    return UpdateItemRequest.builder()
        .tableName(table)
        .key(items.primaryKey(request.key()))
        .conditionExpression(fresh.condition())
        .updateExpression(fresh.update())
        .expressionAttributeNames(fresh.names())
        .expressionAttributeValues(values.map())
        .returnValues(ReturnValue.UPDATED_NEW)
        .returnValuesOnConditionCheckFailure(ReturnValuesOnConditionCheckFailure.ALL_OLD)
        .build();
  }

  private UpdateItemRequest retakeRequest(ClaimRequest request, IdempotencyRecord current,
      IdempotencyRecord next) {
    boolean isTakeover = current.status() == Status.IN_PROGRESS;
    Statement statement = isTakeover ? takeover : retry;
    long expiresAt = EpochMicros.of(next.expiresAt());
    Values values = new Values()
        .put(":now", n(EpochMicros.of(request.now())))
        .put(":old_token", n(current.token()))
        .put(":in_progress", s(Status.IN_PROGRESS.name()))
        .put(":token", n(next.token()))
        .put(":lease_until", n(EpochMicros.of(next.leaseUntil())))
        .put(":attempts", n(next.attempts()))
        .put(":claim_id", n(request.claimId()))
        .put(":expires_at", n(expiresAt))
        .put(":ttl", n(Ttl.seconds(expiresAt)));
    if (!isTakeover) {
      values.put(":failed", s(Status.FAILED.name()));
    }
    return UpdateItemRequest.builder()
        .tableName(table)
        .key(items.primaryKey(request.key()))
        .conditionExpression(statement.condition())
        .updateExpression(statement.update())
        .expressionAttributeNames(statement.names())
        .expressionAttributeValues(values.map())
        .returnValues(ReturnValue.ALL_NEW)
        .returnValuesOnConditionCheckFailure(ReturnValuesOnConditionCheckFailure.ALL_OLD)
        .build();
  }
}
