package dev.once.kafka.spring;

import dev.once.kafka.BatchResult;
import dev.once.kafka.IdempotentConsumer;
import java.time.Duration;
import org.apache.kafka.clients.consumer.Consumer;

/** What both listeners need from the container's consumer and the result. */
final class GroupIds {

  /** Spring sleeps (pausing the consumer) for the nack: never less than this, to avoid a spin. */
  private static final Duration MIN_SLEEP = Duration.ofMillis(1);

  private GroupIds() {}

  static String of(Consumer<?, ?> consumer) {
    return consumer == null ? null : consumer.groupMetadata().groupId();
  }

  static Duration sleep(BatchResult result, IdempotentConsumer<?, ?> idempotent) {
    Duration delay = result.retryDelay(idempotent.once().clock().instant());
    return delay.compareTo(MIN_SLEEP) < 0 ? MIN_SLEEP : delay;
  }
}
