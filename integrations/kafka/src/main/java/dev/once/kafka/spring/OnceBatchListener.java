package dev.once.kafka.spring;

import dev.once.kafka.BatchResult;
import dev.once.kafka.IdempotentConsumer;
import java.util.List;
import java.util.Objects;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.springframework.kafka.listener.BatchAcknowledgingConsumerAwareMessageListener;
import org.springframework.kafka.support.Acknowledgment;

/**
 * A Spring Kafka batch listener over an {@link IdempotentConsumer}: one {@code claimAll} per poll
 * batch, then the handler for each acquired record in partition order. When every record is final
 * the batch is acknowledged; otherwise it is {@code nack}ed at the first unfinished record, so the
 * container commits the records before it and delivers it and the rest again after the retry
 * delay (records already final among the rest are then skipped as duplicates). Needs the
 * container's {@code AckMode.MANUAL} or {@code MANUAL_IMMEDIATE}. Scope: the builder's, else the
 * consumer group.
 *
 * @param <K> the record key type
 * @param <V> the record value type
 */
public final class OnceBatchListener<K, V>
    implements BatchAcknowledgingConsumerAwareMessageListener<K, V> {

  private final IdempotentConsumer<K, V> idempotent;

  public OnceBatchListener(IdempotentConsumer<K, V> idempotent) {
    this.idempotent = Objects.requireNonNull(idempotent, "idempotent");
  }

  @Override
  public void onMessage(List<ConsumerRecord<K, V>> records, Acknowledgment acknowledgment,
      Consumer<?, ?> consumer) {
    Objects.requireNonNull(acknowledgment,
        "no Acknowledgment: set the container's AckMode to MANUAL or MANUAL_IMMEDIATE");
    if (records.isEmpty()) {
      return;
    }
    BatchResult result = idempotent.process(records, GroupIds.of(consumer));
    if (result.isComplete()) {
      acknowledgment.acknowledge();
    } else {
      acknowledgment.nack(result.firstUnfinishedIndex(), GroupIds.sleep(result, idempotent));
    }
  }
}
