package dev.once.examples.payments;

import static dev.once.testkit.OnceAssertions.assertThatKey;
import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.Once;
import dev.once.batch.BatchExecutor;
import dev.once.batch.DeadLetter;
import dev.once.batch.ItemResult;
import dev.once.testkit.OnceExtension;
import dev.once.testkit.OnceRecorder;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.MessageProperties;
import tools.jackson.databind.json.JsonMapper;

/**
 * The payment requests handler on core's batch engine, which every broker adapter runs on
 * (docs/testing.md, "A consumer"): a batch delivered twice, as an at-least-once broker does.
 */
@ExtendWith(OnceExtension.class)
class PaymentRequestHandlerTest {

  @Test
  void aBatchDeliveredTwiceChargesOnceAndDeadLettersWhatCannotBePaid(Once base,
      OnceRecorder recorder) {
    Once once = base.toBuilder().failurePolicy(OnceSetup.FAILURES).build();
    List<String> charged = new ArrayList<>();
    Payments payments = new Payments() {
      @Override
      public Charge charge(String paymentKey, ChargeRequest request) {
        if (request.amount() > 1_000) {
          throw new InsufficientFundsException(request.wallet(), request.amount());
        }
        charged.add(request.wallet() + " " + request.amount());
        return new Charge("ch-" + charged.size(), request.wallet(), request.amount(), 0);
      }

      @Override
      public void refund(String refundKey, Charge charge) {}
    };
    List<DeadLetter<Message>> deadLetters = new ArrayList<>();
    BatchExecutor<Message> consumer = BatchExecutor.<Message>builder(once,
            new PaymentRequestHandler(payments, JsonMapper.builder().build()))
        .scope("payments")
        .key(m -> m.getMessageProperties().getMessageId())
        .fingerprint(m -> Fingerprint.of(m.getBody()))
        .deadLetters(deadLetters::add)
        .build();
    List<Message> delivery = List.of(
        message("pay-1", "{\"wallet\": \"rita\", \"amount\": 700}"),
        message("pay-2", "{\"wallet\": \"sam\", \"amount\": 5000}"),
        message("pay-3", "not JSON"));

    consumer.process(delivery);
    List<ItemResult<Message>> redelivery = consumer.process(delivery).items(); // at least once

    assertThat(charged).containsExactly("rita 700");
    assertThat(deadLetters).extracting(DeadLetter::reason).containsExactly(
        DeadLetter.Reason.TERMINAL_FAILURE, DeadLetter.Reason.TERMINAL_FAILURE);
    assertThat(redelivery).allMatch(ItemResult::isFinal);
    assertThatKey(once, recorder, IdempotencyKey.of("payments", "pay-1"))
        .ranOnce().succeeded().wasReplayed(1);
    assertThatKey(once, recorder, IdempotencyKey.of("payments", "pay-2"))
        .ranOnce().failedFor(InsufficientFundsException.class).wasReplayed(1);
  }

  private static Message message(String id, String json) {
    MessageProperties properties = new MessageProperties();
    properties.setMessageId(id);
    return new Message(json.getBytes(UTF_8), properties);
  }
}
