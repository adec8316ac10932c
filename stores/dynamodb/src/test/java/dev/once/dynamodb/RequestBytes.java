package dev.once.dynamodb;

import java.util.ArrayList;
import java.util.List;
import software.amazon.awssdk.core.interceptor.Context;
import software.amazon.awssdk.core.interceptor.ExecutionAttributes;
import software.amazon.awssdk.core.interceptor.ExecutionInterceptor;
import software.amazon.awssdk.core.interceptor.SdkExecutionAttribute;

/**
 * Records the size of every request body a client sends (the JSON DynamoDB receives, as the HTTP
 * request's content length), with the operation's name: what a store's expressions, placeholders
 * and values cost on the wire.
 */
final class RequestBytes implements ExecutionInterceptor {

  /** One request sent: its operation and body size. */
  record Sent(String operation, long bytes) {}

  private final List<Sent> sent = new ArrayList<>();

  @Override
  public synchronized void beforeTransmission(Context.BeforeTransmission context,
      ExecutionAttributes attributes) {
    long bytes = context.httpRequest().firstMatchingHeader("Content-Length").map(Long::parseLong)
        .orElseGet(() -> context.requestBody().flatMap(b -> b.optionalContentLength())
            .orElseThrow(() -> new IllegalStateException("a request without a known length")));
    sent.add(new Sent(attributes.getAttribute(SdkExecutionAttribute.OPERATION_NAME), bytes));
  }

  /** The requests sent since the last call, and forgets them. */
  synchronized List<Sent> take() {
    List<Sent> taken = List.copyOf(sent);
    sent.clear();
    return taken;
  }

  /** The bytes of the requests sent since the last call, and forgets them. */
  long takeBytes() {
    return take().stream().mapToLong(Sent::bytes).sum();
  }
}
