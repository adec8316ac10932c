package dev.once.dynamodb;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.Outcome;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;

/**
 * What a new key costs on the wire: the request bodies of its claim and its completion, with a
 * payment-sized key and outcome, against budgets that fail when expressions or placeholders grow.
 */
class RequestSizeTest {

  private static final RequestBytes BYTES = new RequestBytes();
  private static final Fingerprint FP = Fingerprint.of(
      "{\"amount\":1000,\"currency\":\"EUR\",\"customer\":\"cus_42\"}");
  private static final Outcome OUTCOME = Outcome.success("application/json",
      "{\"id\":\"ch_1\",\"status\":\"succeeded\"}".getBytes(StandardCharsets.UTF_8));
  private static DynamoDbClient client;
  private static DynamoDbStore store;

  @BeforeAll
  static void createStore() {
    client = DynamoDbLocal.get().newClient(BYTES);
    store = DynamoDbStore.builder(client).table(DynamoDbLocal.uniqueTable("bytes")).build();
    store.createTable();
  }

  @AfterAll
  static void closeClient() {
    client.close();
  }

  private static ClaimRequest request(IdempotencyKey key, Instant now) {
    return new ClaimRequest(key, FP, now, Duration.ofSeconds(30), Duration.ofHours(24));
  }

  @Test
  void aNewKeyAndADuplicateSendFewBytes() {
    IdempotencyKey key = IdempotencyKey.of("payments", UUID.randomUUID().toString());
    Instant now = Instant.now();
    BYTES.take();

    Claim.Acquired acquired = (Claim.Acquired) store.claim(request(key, now));
    long claim = BYTES.takeBytes();
    store.complete(key, acquired.token(), OUTCOME, now, Duration.ofHours(24));
    long completion = BYTES.takeBytes();
    assertThat(store.claim(request(key, now))).isInstanceOf(Claim.Replay.class);
    long duplicate = BYTES.takeBytes();

    System.out.printf("request bytes: claim %d + completion %d = %d per new key; duplicate %d%n",
        claim, completion, claim + completion, duplicate);
    // 2,467 bytes (claim 1,478, completion 989) with readable placeholders; 1,722 with one-letter
    // ones (the claim id, a random long, moves the figures by a few bytes).
    assertThat(claim + completion).isLessThanOrEqualTo(1_800);
    assertThat(duplicate).isLessThanOrEqualTo(1_050);
  }
}
