package dev.once.dynamodb;

import java.net.SocketException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Predicate;
import software.amazon.awssdk.core.exception.SdkClientException;
import software.amazon.awssdk.core.interceptor.Context;
import software.amazon.awssdk.core.interceptor.ExecutionAttributes;
import software.amazon.awssdk.core.interceptor.ExecutionInterceptor;
import software.amazon.awssdk.services.dynamodb.model.UpdateItemRequest;

/**
 * Loses the answers of UpdateItem attempts that DynamoDB Local really applied: after the response
 * came back, the attempt fails as if the connection had been reset, so the SDK retries the same
 * request (standard retry mode) or, once its attempts are spent, throws. This is the re-sent
 * command the store must recognise: the server state is real, only the answer is gone.
 */
final class LostAnswers implements ExecutionInterceptor {

  private final Predicate<UpdateItemRequest> which;
  private final AtomicInteger toLose;
  private final AtomicInteger attempts = new AtomicInteger();
  private final AtomicInteger lost = new AtomicInteger();

  /** Loses the next {@code count} answers to UpdateItem requests that {@code which} selects. */
  LostAnswers(int count, Predicate<UpdateItemRequest> which) {
    this.toLose = new AtomicInteger(count);
    this.which = which;
  }

  /** Loses the next {@code count} answers to any UpdateItem. */
  LostAnswers(int count) {
    this(count, r -> true);
  }

  /** Loses the answers of the next {@code count} UpdateItem attempts (selected ones only). */
  void loseNext(int count) {
    toLose.set(count);
  }

  @Override
  public void afterTransmission(Context.AfterTransmission context,
      ExecutionAttributes executionAttributes) {
    if (context.request() instanceof UpdateItemRequest update && which.test(update)) {
      attempts.incrementAndGet();
      if (toLose.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
        lost.incrementAndGet();
        // What the SDK makes of an I/O error while reading an answer: retryable.
        throw SdkClientException.create("Unable to execute HTTP request: Connection reset",
            new SocketException("Connection reset (the test lost this answer; the write was"
                + " applied)"));
      }
    }
  }

  /** UpdateItem attempts that reached DynamoDB Local and came back, lost or not. */
  int attempts() {
    return attempts.get();
  }

  /** Answers lost. */
  int lost() {
    return lost.get();
  }
}
