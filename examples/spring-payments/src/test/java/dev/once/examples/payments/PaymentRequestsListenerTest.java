package dev.once.examples.payments;

import static dev.once.testkit.OnceAssertions.assertThatKey;
import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import dev.once.IdempotencyKey;
import dev.once.spi.Status;
import dev.once.testkit.Await;
import dev.once.testkit.OnceRecorder.Event;
import org.junit.jupiter.api.Test;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.MessageBuilder;
import org.springframework.amqp.rabbit.core.RabbitTemplate;
import org.springframework.beans.factory.annotation.Autowired;

/**
 * The payment requests listener on the real RabbitMQ server: a request published twice (the
 * publisher retried) is charged once, and one the wallet cannot pay is dead-lettered once.
 */
class PaymentRequestsListenerTest extends PaymentsTestBase {

  @Autowired
  RabbitTemplate rabbit;

  @Test
  void aRequestDeliveredTwiceIsChargedOnce() {
    wallet("rita", 5_000);
    IdempotencyKey key = IdempotencyKey.of(QUEUE, "pay-rita-1"); // scope: the listener's

    publish("pay-rita-1", "{\"wallet\": \"rita\", \"amount\": 1200}");
    Await.until("the request handled",
        () -> recorder.count(key, Event.COMPLETED) == 1, () -> recorder.entries().toString());
    publish("pay-rita-1", "{\"wallet\": \"rita\", \"amount\": 1200}"); // the publisher's retry
    Await.until("the duplicate replayed",
        () -> recorder.count(key, Event.REPLAYED) == 1, () -> recorder.entries().toString());

    assertThat(balance("rita")).isEqualTo(3_800);
    assertThat(charges("rita")).isEqualTo(1);
    assertThatKey(once, recorder, key).ranOnce().succeeded().wasReplayed(1);
  }

  @Test
  void aRequestTheWalletCannotPayIsDeadLetteredOnce() {
    wallet("sam", 100);
    IdempotencyKey key = IdempotencyKey.of(QUEUE, "pay-sam-1");

    publish("pay-sam-1", "{\"wallet\": \"sam\", \"amount\": 5000}");
    Message dead = rabbit.receive(QUEUE + ".dlq", Await.DEFAULT.toMillis());
    // The dead letter is published before the failure is stored: wait for the store too.
    Await.until("the failure stored", () -> once.store().find(key)
        .filter(r -> r.status() == Status.COMPLETED).isPresent());

    assertThat(dead).isNotNull();
    assertThat(new String(dead.getBody(), UTF_8)).contains("\"sam\"");
    assertThat((String) dead.getMessageProperties().getHeader("x-once-reason"))
        .isEqualTo("TERMINAL_FAILURE");
    assertThat((String) dead.getMessageProperties().getHeader("x-once-idempotency-key"))
        .isEqualTo("pay-sam-1");
    assertThat(balance("sam")).isEqualTo(100);
    assertThatKey(once, recorder, key).ranOnce().failedFor(InsufficientFundsException.class);
  }

  private void publish(String messageId, String json) {
    rabbit.send("", QUEUE, MessageBuilder.withBody(json.getBytes(UTF_8))
        .setMessageId(messageId)
        .setContentType("application/json")
        .build());
  }
}
