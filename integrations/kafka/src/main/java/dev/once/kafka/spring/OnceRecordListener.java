package dev.once.kafka.spring;

import dev.once.kafka.BatchResult;
import dev.once.kafka.IdempotentConsumer;
import java.util.List;
import java.util.Objects;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.springframework.kafka.support.Acknowledgment;
import org.springframework.kafka.listener.AcknowledgingConsumerAwareMessageListener;

/**
 * A Spring Kafka record listener over an {@link IdempotentConsumer}: each record is claimed, handled
 * once and acknowledged when its outcome is final; otherwise it is {@code nack}ed so the container
 * seeks back to it and delivers it again after the retry delay. Needs the container's
 * {@code AckMode.MANUAL} or {@code MANUAL_IMMEDIATE}. Scope: the builder's, else the consumer group.
 *
 * <p>A record listener claims one record per store round trip; prefer {@link OnceBatchListener}
 * for throughput.
 *
 * @param <K> the record key type
 * @param <V> the record value type
 */
public final class OnceRecordListener<K, V>
    implements AcknowledgingConsumerAwareMessageListener<K, V> {

  private final IdempotentConsumer<K, V> idempotent;

  public OnceRecordListener(IdempotentConsumer<K, V> idempotent) {
    this.idempotent = Objects.requireNonNull(idempotent, "idempotent");
  }

  @Override
  public void onMessage(ConsumerRecord<K, V> record, Acknowledgment acknowledgment,
      Consumer<?, ?> consumer) {
    Objects.requireNonNull(acknowledgment,
        "no Acknowledgment: set the container's AckMode to MANUAL or MANUAL_IMMEDIATE");
    BatchResult result = idempotent.process(List.of(record), GroupIds.of(consumer));
    if (result.isComplete()) {
      acknowledgment.acknowledge();
    } else {
      acknowledgment.nack(GroupIds.sleep(result, idempotent));
    }
  }
}
