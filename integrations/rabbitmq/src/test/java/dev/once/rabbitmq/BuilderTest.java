package dev.once.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.rabbitmq.client.Connection;
import dev.once.InMemoryStore;
import dev.once.InvalidKeyException;
import dev.once.Once;
import dev.once.rabbitmq.spring.OnceRabbitListener;
import java.io.IOException;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** Mistakes in building or starting a consumer fail at once, with a message that says what. */
class BuilderTest {

  private final Once once = Once.builder(new InMemoryStore()).build();

  @Test
  void aQueueAndADeadLetterDestinationAreRequired() {
    assertThatThrownBy(() -> IdempotentRabbitConsumer.builder(once, (d, a) -> { })
        .deadLetterExchange("dlx").build())
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("queue");
    assertThatThrownBy(() -> IdempotentRabbitConsumer.builder(once, (d, a) -> { })
        .queue("orders").build())
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("dead-letter exchange");
    assertThatThrownBy(() -> OnceRabbitListener.builder(once, (m, a) -> { })
        .deadLetterExchange("dlx").build())
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("scope");
  }

  @Test
  void aQueueNameThatCannotBeTheScopeAsksForAScope() {
    assertThatThrownBy(() -> IdempotentRabbitConsumer.builder(once, (d, a) -> { })
        .queue("my orders").deadLetterExchange("dlx").build())
        .isInstanceOf(InvalidKeyException.class).hasMessageContaining("set a scope");
    assertThat(IdempotentRabbitConsumer.builder(once, (d, a) -> { })
        .queue("my orders").scope("orders").deadLetterExchange("dlx").build().scope())
        .isEqualTo("orders");
  }

  @Test
  void badSettingsAreRefused() {
    IdempotentRabbitConsumer.Builder builder =
        IdempotentRabbitConsumer.builder(once, (d, a) -> { });
    assertThatThrownBy(() -> builder.prefetch(0)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> builder.prefetch(70_000))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("65535");
    assertThatThrownBy(() -> builder.linger(Duration.ofMillis(-1)))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> builder.config(null)).isInstanceOf(NullPointerException.class);
  }

  @Test
  void startingOnAQueueThatDoesNotExistFailsAndLeavesTheConnectionUsable() throws Exception {
    IdempotentRabbitConsumer consumer = IdempotentRabbitConsumer.builder(once, (d, a) -> { })
        .queue("once-test-missing-" + UUID.randomUUID()).deadLetterExchange("dlx").build();
    try (Connection connection = Rabbit.connect()) {
      assertThatThrownBy(() -> consumer.start(connection)).isInstanceOf(IOException.class);
      assertThat(connection.isOpen()).isTrue();
      connection.createChannel().close();
    }
  }
}
