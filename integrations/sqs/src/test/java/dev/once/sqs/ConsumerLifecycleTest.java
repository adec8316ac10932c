package dev.once.sqs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.InMemoryStore;
import dev.once.InvalidKeyException;
import dev.once.Once;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Starting, stopping and configuring a consumer (store-independent). */
class ConsumerLifecycleTest {

  private final Once once = Once.builder(new InMemoryStore()).build();

  @Test
  void anInterruptEndsTheConsumerLikeStop() throws Exception {
    String queue = ElasticMq.queue("interrupt");
    IdempotentSqsConsumer consumer = IdempotentSqsConsumer
        .builder(once, ElasticMq.SQS, queue, (message, attempt) -> { })
        .waitTime(Duration.ofSeconds(2)) // long polls on an empty queue, one after the other
        .build();
    ExecutorService executor = Executors.newSingleThreadExecutor();
    Future<?> running = executor.submit(consumer);

    executor.shutdownNow(); // an application shutting its executor down: an interrupt, no stop()

    assertThat(executor.awaitTermination(30, TimeUnit.SECONDS)).isTrue();
    assertThat(running).isDone();
    assertThat(consumer.isStopRequested()).isTrue();
  }

  @Test
  void aConsumerRunsOnce() {
    IdempotentSqsConsumer consumer = IdempotentSqsConsumer
        .builder(once, ElasticMq.SQS, ElasticMq.queue("once"), (message, attempt) -> { })
        .build();
    consumer.close();

    assertThatThrownBy(consumer::run).isInstanceOf(IllegalStateException.class);
  }

  @Test
  void theScopeIsTheQueueNameAndSettingsOutsideSqsLimitsAreRefused() {
    IdempotentSqsConsumer.Builder builder = IdempotentSqsConsumer.builder(once, ElasticMq.SQS,
        "http://127.0.0.1:9324/000000000000/orders.fifo", (message, attempt) -> { });

    assertThat(builder.build().scope()).isEqualTo("orders.fifo");
    assertThatThrownBy(() -> builder.waitTime(Duration.ofSeconds(21)))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> builder.visibilityTimeout(Duration.ofMillis(500)))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> builder.visibilityTimeout(Duration.ofHours(13)))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> builder.batchSize(0)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> builder.batchSize(10_001))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> builder.scope("has space"))
        .isInstanceOf(InvalidKeyException.class);
  }
}
