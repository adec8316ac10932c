package dev.once.kafka;

import dev.once.Attempt;
import org.apache.kafka.clients.consumer.ConsumerRecord;

/**
 * The business logic for one record, run at most once per idempotency key (in effect) by an
 * {@link IdempotentConsumer}. Throwing an {@link Exception} reports a failure: terminal ones (by the
 * {@link dev.once.FailurePolicy} of the {@link dev.once.Once}) go to the dead-letter topic at once,
 * others are retried up to {@link IdempotentConsumer.Builder#maxAttempts}. An {@link Error} is
 * treated as the death of the process: nothing is recorded and the poll loop ends.
 *
 * @param <K> the record key type
 * @param <V> the record value type
 */
@FunctionalInterface
public interface RecordHandler<K, V> {

  /**
   * Handles {@code record}.
   *
   * @param attempt the claim this run holds; pass {@link Attempt#key()} to downstream systems that
   *     deduplicate, so a side effect repeated after a crash is deduplicated there. Null only for a
   *     record without a key processed under {@link NoKeyPolicy#PROCESS_UNPROTECTED}.
   */
  void handle(ConsumerRecord<K, V> record, Attempt attempt) throws Exception;
}
