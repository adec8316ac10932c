package dev.once.dynamodb;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import software.amazon.awssdk.core.interceptor.Context;
import software.amazon.awssdk.core.interceptor.ExecutionAttributes;
import software.amazon.awssdk.core.interceptor.ExecutionInterceptor;
import software.amazon.awssdk.core.interceptor.SdkExecutionAttribute;

/**
 * Records the DynamoDB operations a client sends (an SDK execution interceptor on a real client),
 * and how many were in flight at most.
 */
final class CallCounter implements ExecutionInterceptor {

  private final List<String> operations = new CopyOnWriteArrayList<>();
  private final AtomicInteger inFlight = new AtomicInteger();
  private final AtomicInteger maxInFlight = new AtomicInteger();

  @Override
  public void beforeExecution(Context.BeforeExecution context, ExecutionAttributes attributes) {
    operations.add(attributes.getAttribute(SdkExecutionAttribute.OPERATION_NAME));
    maxInFlight.accumulateAndGet(inFlight.incrementAndGet(), Math::max);
  }

  @Override
  public void afterExecution(Context.AfterExecution context, ExecutionAttributes attributes) {
    inFlight.decrementAndGet();
  }

  @Override
  public void onExecutionFailure(Context.FailedExecution context, ExecutionAttributes attributes) {
    inFlight.decrementAndGet();
  }

  /** The operations sent since the last call, and forgets them. */
  List<String> take() {
    List<String> taken = List.copyOf(operations);
    operations.clear();
    return taken;
  }

  int maxInFlight() {
    return maxInFlight.get();
  }
}
