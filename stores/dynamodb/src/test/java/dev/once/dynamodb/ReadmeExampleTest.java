package dev.once.dynamodb;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.Codecs;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.Once;
import dev.once.Result;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;

/** The README's example, compiled and run against DynamoDB Local. */
class ReadmeExampleTest {

  private final AtomicInteger charges = new AtomicInteger();

  private String charge(long cents, String idempotencyKey) {
    return "charge-" + charges.incrementAndGet() + " of " + cents + " under " + idempotencyKey;
  }

  @Test
  void chargesOnce() {
    DynamoDbClient dynamoDb = DynamoDbLocal.get().client();   // production: DynamoDbClient.create()
    String requestBody = "{\"order\":\"o-1\",\"cents\":1250}";

    // README:begin
    DynamoDbStore store = DynamoDbStore.builder(dynamoDb)     // your client; never closed by the store
        .table("payments-once")
        .build();
    store.createTable();                 // on-demand table with TTL on "ttl" (or create it with IaC)

    Once once = Once.builder(store)
        .lease(Duration.ofSeconds(30))
        .retention(Duration.ofHours(24))
        .build();

    Result<String> result = once.call(IdempotencyKey.of("payments.charge", "o-1"),
        Fingerprint.of(requestBody), Codecs.utf8(),
        attempt -> charge(1250, attempt.key()));               // the gateway dedupes on attempt.key()
    // README:end

    Result<String> duplicate = once.call(IdempotencyKey.of("payments.charge", "o-1"),
        Fingerprint.of(requestBody), Codecs.utf8(), attempt -> charge(1250, attempt.key()));
    assertThat(result.replayed()).isFalse();
    assertThat(duplicate.replayed()).isTrue();
    assertThat(duplicate.value()).isEqualTo(result.value());
    assertThat(charges).hasValue(1);
  }
}
