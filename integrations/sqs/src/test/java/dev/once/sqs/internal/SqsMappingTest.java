package dev.once.sqs.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.IdempotencyKey;
import dev.once.batch.DeadLetter;
import dev.once.sqs.DeadLetterAttributes;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.sqs.model.Message;
import software.amazon.awssdk.services.sqs.model.MessageAttributeValue;
import software.amazon.awssdk.services.sqs.model.MessageSystemAttributeName;

/** How SQS messages map to keys, retry delays and dead-letter attributes. */
class SqsMappingTest {

  private static final Instant NOW = Instant.parse("2026-01-01T00:00:00Z");

  @Test
  void aRetryIsNeverEarlierThanAskedNorLongerThanTwelveHours() {
    assertThat(ConsumerLoop.retrySeconds(NOW.plusMillis(100), NOW)).isEqualTo(1);
    assertThat(ConsumerLoop.retrySeconds(NOW.plusMillis(1000), NOW)).isEqualTo(1);
    assertThat(ConsumerLoop.retrySeconds(NOW.plusMillis(1001), NOW)).isEqualTo(2);
    assertThat(ConsumerLoop.retrySeconds(NOW, NOW)).isZero();
    assertThat(ConsumerLoop.retrySeconds(NOW.minusSeconds(5), NOW)).isZero();
    assertThat(ConsumerLoop.retrySeconds(NOW.plus(Duration.ofDays(2)), NOW)).isEqualTo(43_200);
  }

  @Test
  void theKeyIsTheDeduplicationIdThenTheAttributeThenTheMessageId() {
    Message plain = Message.builder().messageId("m-1").body("b").build();
    Message withAttribute = plain.toBuilder().messageAttributes(Map.of("idempotency-key",
        text("order-7"))).build();
    Message fifo = withAttribute.toBuilder().attributes(Map.of(
        MessageSystemAttributeName.MESSAGE_DEDUPLICATION_ID, "dedup-3",
        MessageSystemAttributeName.MESSAGE_GROUP_ID, "g")).build();
    Message blankAttribute = plain.toBuilder().messageAttributes(Map.of("idempotency-key",
        text(" "))).build();

    assertThat(MessageKeys.defaultKey(plain, "idempotency-key")).isEqualTo("m-1");
    assertThat(MessageKeys.defaultKey(withAttribute, "idempotency-key")).isEqualTo("order-7");
    assertThat(MessageKeys.defaultKey(withAttribute, "other")).isEqualTo("m-1");
    assertThat(MessageKeys.defaultKey(fifo, "idempotency-key")).isEqualTo("dedup-3");
    assertThat(MessageKeys.defaultKey(blankAttribute, "idempotency-key")).isEqualTo("m-1");
    assertThat(MessageKeys.group(fifo)).isEqualTo("g");
    assertThat(MessageKeys.group(plain)).isNull();
    assertThat(MessageKeys.queueName("https://sqs.eu-west-1.amazonaws.com/1234/orders.fifo"))
        .isEqualTo("orders.fifo");
    assertThat(MessageKeys.isFifo("http://127.0.0.1:9324/000000000000/orders.fifo")).isTrue();
    assertThat(MessageKeys.isFifo("http://127.0.0.1:9324/000000000000/orders")).isFalse();
  }

  @Test
  void aDeadLetterKeepsAtMostTenAttributesTheKeyFirst() {
    Map<String, MessageAttributeValue> originals = new LinkedHashMap<>();
    for (int i = 0; i < 8; i++) {
      originals.put("a" + i, text("v" + i));
    }
    originals.put("idempotency-key", text("k1"));
    Message message = Message.builder().messageId("m-1").body("b")
        .messageAttributes(originals).build();
    QueueDeadLetters letters = new QueueDeadLetters(null, "http://h/1/dlq", "idempotency-key");

    Map<String, MessageAttributeValue> out = letters.attributes(new DeadLetter<>(message,
        DeadLetter.Reason.TERMINAL_FAILURE, IdempotencyKey.of("s", "k1"), "x.Poison",
        "cannot parse", 1));

    assertThat(out).hasSize(QueueDeadLetters.MAX_ATTRIBUTES);
    assertThat(out.keySet()).startsWith(DeadLetterAttributes.REASON,
        DeadLetterAttributes.EXCEPTION_CLASS, DeadLetterAttributes.EXCEPTION_MESSAGE,
        DeadLetterAttributes.IDEMPOTENCY_KEY, DeadLetterAttributes.ORIGINAL_MESSAGE_ID,
        DeadLetterAttributes.ATTEMPTS, "idempotency-key");
  }

  @Test
  void anEmptyExceptionMessageIsLeftOutAndALongOneCut() {
    Message message = Message.builder().messageId("m-1").body("b").build();
    QueueDeadLetters letters = new QueueDeadLetters(null, "http://h/1/dlq", "idempotency-key");

    Map<String, MessageAttributeValue> none = letters.attributes(new DeadLetter<>(message,
        DeadLetter.Reason.NO_KEY, null, "x.NoKey", "", 0));
    Map<String, MessageAttributeValue> cut = letters.attributes(new DeadLetter<>(message,
        DeadLetter.Reason.RETRIES_EXHAUSTED, IdempotencyKey.of("s", "k"), "x.Boom",
        "m".repeat(10_000), 5));

    assertThat(none).doesNotContainKeys(DeadLetterAttributes.EXCEPTION_MESSAGE,
        DeadLetterAttributes.IDEMPOTENCY_KEY);
    assertThat(cut.get(DeadLetterAttributes.EXCEPTION_MESSAGE).stringValue())
        .hasSize(QueueDeadLetters.MAX_EXCEPTION_MESSAGE);
  }

  private static MessageAttributeValue text(String value) {
    return MessageAttributeValue.builder().dataType("String").stringValue(value).build();
  }
}
