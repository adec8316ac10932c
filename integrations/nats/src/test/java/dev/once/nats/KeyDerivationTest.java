package dev.once.nats;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.nats.Broker.Topology;
import io.nats.client.Message;
import io.nats.client.impl.Headers;
import io.nats.client.impl.NatsMessage;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The key derivations, on messages built in memory. */
class KeyDerivationTest {

  private static Message message(String data, String... headers) {
    Headers h = new Headers();
    for (int i = 0; i < headers.length; i += 2) {
      h.add(headers[i], headers[i + 1]);
    }
    return NatsMessage.builder().subject("orders.created").headers(h)
        .data(data.getBytes(StandardCharsets.UTF_8)).build();
  }

  @Test
  void theHeaderByDefaultIsNatsMsgId() {
    KeyDerivation keys = KeyDerivation.header(KeyDerivation.DEFAULT_HEADER);
    assertThat(keys.keyOf(message("x", "Nats-Msg-Id", "order-7"))).isEqualTo("order-7");
    assertThat(keys.keyOf(message("x"))).isNull();
    assertThat(keys.keyOf(message("x", "Nats-Msg-Id", ""))).isNull();
  }

  @Test
  void theSha256OfThePayloadIsAFallback() {
    KeyDerivation keys = KeyDerivation.header("Idempotency-Key")
        .orElse(KeyDerivation.sha256OfData());
    assertThat(keys.keyOf(message("order 7", "Idempotency-Key", "k7"))).isEqualTo("k7");
    assertThat(keys.keyOf(message("order 7")))
        .hasSize(64)
        .isEqualTo(keys.keyOf(message("order 7")))
        .isNotEqualTo(keys.keyOf(message("order 8")));
    assertThat(keys.keyOf(message(""))).as("an empty payload has no key").isNull();
  }

  @Test
  void theStreamSequenceNamesTheStoredMessage() throws Exception {
    assertThat(KeyDerivation.streamSequence().keyOf(message("x"))).as("not from JetStream")
        .isNull();
    Topology t = Broker.create("seq", Duration.ofSeconds(30), Duration.ofMinutes(2));
    try {
      long seq = Broker.publish(t.subject(), "x").getSeqno();
      Message fetched = Broker.ADMIN.jetStream().getConsumerContext(t.stream(), t.consumer())
          .next(Duration.ofSeconds(10));
      assertThat(KeyDerivation.streamSequence().keyOf(fetched)).isEqualTo(t.stream() + ":" + seq);
      fetched.ack();
    } finally {
      Broker.delete(t);
    }
  }
}
