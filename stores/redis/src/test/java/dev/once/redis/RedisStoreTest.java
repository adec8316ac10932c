package dev.once.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.PayloadTooLargeException;
import dev.once.StoreUnavailableException;
import dev.once.redis.internal.KeyLayout;
import dev.once.redis.internal.Micros;
import dev.once.redis.internal.RedisEngine;
import dev.once.redis.testing.RedisServerProcess;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.ClaimRules;
import dev.once.spi.Outcome;
import dev.once.spi.Status;
import dev.once.testkit.ManualClock;
import io.lettuce.core.cluster.SlotHash;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** What the conformance suite cannot see: the Redis layout, Lua details, configuration errors. */
class RedisStoreTest {

  private static final Fingerprint FP = Fingerprint.of("request");
  private static final Duration LEASE = Duration.ofSeconds(30);
  private static final Duration RETENTION = Duration.ofHours(1);
  private static final RedisServerProcess SERVER = RedisServers.Standalone.SERVER;

  private final String prefix = "t-" + UUID.randomUUID().toString().substring(0, 8) + ":";
  private final ManualClock clock = new ManualClock();
  private RedisStore store;

  @BeforeEach
  void open() {
    store = RedisStore.builder(RedisServers.Standalone.CLIENT).keyPrefix(prefix).build();
  }

  @AfterEach
  void close() {
    store.close();
  }

  private ClaimRequest request(IdempotencyKey key) {
    return new ClaimRequest(key, FP, clock.instant(), LEASE, RETENTION);
  }

  private List<String> keysOfThisStore() {
    List<String> keys = new ArrayList<>();
    String cursor = "0";
    do {
      @SuppressWarnings("unchecked")
      List<Object> page = (List<Object>) SERVER.call("SCAN", cursor, "MATCH", prefix + "*",
          "COUNT", "1000");
      cursor = (String) page.get(0);
      @SuppressWarnings("unchecked")
      List<Object> found = (List<Object>) page.get(1);
      found.forEach(k -> keys.add((String) k));
    } while (!cursor.equals("0"));
    return keys;
  }

  private String recordKey(IdempotencyKey key) {
    return new String(new KeyLayout(prefix).keys(key)[0], StandardCharsets.ISO_8859_1);
  }

  @Test
  void aRecordIsOneHashWhoseKeysShareOneSlotWithItsIndexes() {
    IdempotencyKey key = IdempotencyKey.of("payments.charge", "acme", "order {17} 42");

    store.claim(request(key));

    List<String> keys = keysOfThisStore();
    assertThat(keys).containsExactlyInAnyOrder(recordKey(key),
        recordKey(key).replaceFirst(":r:.*", ":expiry"), recordKey(key).replaceFirst(":r:.*", ":leases"));
    assertThat(recordKey(key)).startsWith(prefix + "{").endsWith(":r:payments.charge acme order {17} 42");
    assertThat(keys).extracting(k -> SlotHash.getSlot(k.getBytes(StandardCharsets.ISO_8859_1)))
        .containsOnly(SlotHash.getSlot(recordKey(key).getBytes(StandardCharsets.ISO_8859_1)));
    assertThat(SERVER.call("TYPE", recordKey(key))).isEqualTo("hash");
    assertThat(SERVER.call("HGET", recordKey(key), "status")).isEqualTo("IN_PROGRESS");
  }

  @Test
  void timesAreComparedAsNumbersAcrossADigitBoundary() {
    // 2001-09-09T01:46:40Z is 10^15 µs: "999999996000000" > "1000000025000000" as strings.
    clock.set(Instant.parse("2001-09-09T01:46:35Z"));
    IdempotencyKey key = IdempotencyKey.of("digits", "k");
    Claim.Acquired first = (Claim.Acquired) store.claim(request(key));
    clock.advance(Duration.ofSeconds(1));

    Claim duplicate = store.claim(request(key));

    assertThat(duplicate).isEqualTo(new Claim.InProgress(first.leaseUntil()));
    assertThat(first.token()).isEqualTo(ClaimRules.firstToken(Instant.parse("2001-09-09T01:46:35Z")));
    assertThat(store.purgeExpired(clock.instant(), 100)).isZero();
    assertThat(store.reapExpiredLeases(clock.instant(), 100)).isZero();
    clock.set(first.leaseUntil());
    assertThat(store.claim(request(key))).isInstanceOf(Claim.Acquired.class)
        .extracting(c -> ((Claim.Acquired) c).token()).isEqualTo(first.token() + 1);
  }

  @Test
  void redisExpiresTheRecordAMarginAfterItsLogicalExpiry() {
    IdempotencyKey key = IdempotencyKey.of("ttl", "k");
    long token = ((Claim.Acquired) store.claim(request(key))).token();
    long margin = RedisEngine.EXPIRY_MARGIN.toMillis();

    long claimedTtl = (Long) SERVER.call("PTTL", recordKey(key));
    store.complete(key, token, Outcome.success("text/plain", new byte[] {1}), clock.instant(),
        Duration.ofHours(2));
    long completedTtl = (Long) SERVER.call("PTTL", recordKey(key));

    assertThat(claimedTtl).isBetween(RETENTION.toMillis() + margin - 10_000,
        RETENTION.toMillis() + margin);
    assertThat(completedTtl).isBetween(Duration.ofHours(2).toMillis() + margin - 10_000,
        Duration.ofHours(2).toMillis() + margin);
  }

  @Test
  void aRecordRedisAlreadyExpiredIsAbsentAndItsIndexEntriesAreDropped() {
    IdempotencyKey key = IdempotencyKey.of("gone", "k");
    store.claim(request(key));
    SERVER.call("DEL", recordKey(key)); // what Redis's own expiry does
    clock.advance(RETENTION);

    assertThat(store.find(key)).isEmpty();
    assertThat(store.reapExpiredLeases(clock.instant(), 100)).isZero();
    assertThat(store.purgeExpired(clock.instant(), 100)).isZero();
    assertThat(keysOfThisStore()).isEmpty();
    assertThat(store.claim(request(key))).isInstanceOf(Claim.Acquired.class);
  }

  @Test
  void purgeLeavesNoIndexBehind() {
    for (int i = 0; i < 20; i++) {
      IdempotencyKey key = IdempotencyKey.of("purge", "k" + i);
      long token = ((Claim.Acquired) store.claim(request(key))).token();
      if (i % 2 == 0) {
        store.complete(key, token, Outcome.success("text/plain", new byte[0]), clock.instant(),
            RETENTION);
      }
    }
    clock.advance(RETENTION);

    assertThat(store.reapExpiredLeases(clock.instant(), 7)).isEqualTo(7);
    assertThat(store.reapExpiredLeases(clock.instant(), 100)).isEqualTo(3);
    assertThat(store.purgeExpired(clock.instant(), 15)).isEqualTo(15);
    assertThat(store.purgeExpired(clock.instant(), 100)).isEqualTo(5);
    assertThat(keysOfThisStore()).isEmpty();
  }

  @Test
  void theExpiryIndexHoldsALowerBoundAndPurgeGoesByTheRecordsRealExpiry() {
    IdempotencyKey later = IdempotencyKey.of("bound", "later");
    IdempotencyKey sooner = IdempotencyKey.of("bound", "sooner");
    Instant claimedAt = clock.instant();
    long laterToken = ((Claim.Acquired) store.claim(request(later))).token();
    long soonerToken = ((Claim.Acquired) store.claim(request(sooner))).token();
    clock.advance(Duration.ofSeconds(10));
    // Completed 10 s after the claim: the record expires 10 s after the claim's expiry, while its
    // index entry stays at the claim's (the completion skips the ZADD).
    store.complete(later, laterToken, Outcome.success("text/plain", new byte[] {1}),
        clock.instant(), RETENTION);
    // A shorter retention moves the expiry earlier: the entry must follow it down.
    store.complete(sooner, soonerToken, Outcome.success("text/plain", new byte[] {2}),
        clock.instant(), Duration.ofMinutes(1));

    String laterKey = recordKey(later);
    String expiry = laterKey.replaceFirst(":r:.*", ":expiry");
    assertThat(Double.parseDouble((String) SERVER.call("ZSCORE", expiry, laterKey)))
        .isEqualTo((double) Micros.of(claimedAt.plus(RETENTION)));
    String soonerKey = recordKey(sooner);
    assertThat(Double.parseDouble((String) SERVER.call("ZSCORE",
        soonerKey.replaceFirst(":r:.*", ":expiry"), soonerKey)))
        .isEqualTo((double) Micros.of(clock.instant().plus(Duration.ofMinutes(1))));

    clock.set(clock.instant().plus(Duration.ofMinutes(1)));
    assertThat(store.purgeExpired(clock.instant(), 100)).isEqualTo(1);
    assertThat(store.find(sooner)).isEmpty();

    // At the claim's expiry the entry is due but the record is not: kept, and re-indexed.
    clock.set(claimedAt.plus(RETENTION));
    assertThat(store.purgeExpired(clock.instant(), 100)).isZero();
    assertThat(store.find(later)).get().extracting(r -> r.status()).isEqualTo(Status.COMPLETED);
    assertThat(Double.parseDouble((String) SERVER.call("ZSCORE", expiry, laterKey)))
        .isEqualTo((double) Micros.of(claimedAt.plus(RETENTION).plusSeconds(10)));

    clock.advance(Duration.ofSeconds(10).minusNanos(1000));
    assertThat(store.purgeExpired(clock.instant(), 100)).isZero();
    clock.advance(Duration.ofNanos(1000));
    assertThat(store.purgeExpired(clock.instant(), 100)).isEqualTo(1);
    assertThat(keysOfThisStore()).isEmpty();
  }

  @Test
  void scriptsComeBackAfterTheServerForgetsThem() {
    IdempotencyKey key = IdempotencyKey.of("noscript", "k");
    long token = ((Claim.Acquired) store.claim(request(key))).token();

    SERVER.call("SCRIPT", "FLUSH");
    store.complete(key, token, Outcome.success("text/plain", new byte[] {7}), clock.instant(),
        RETENTION);
    SERVER.call("SCRIPT", "FLUSH");

    assertThat(store.claim(request(key))).isInstanceOf(Claim.Replay.class);
    assertThat(store.claimAll(List.of(request(key), request(IdempotencyKey.of("noscript", "j")))))
        .extracting(c -> c.getClass().getSimpleName()).containsExactly("Replay", "Acquired");
  }

  @Test
  void aLargeBatchIsAnsweredInOrderWithRepeatedKeysInLaterWaves() {
    List<ClaimRequest> batch = new ArrayList<>();
    for (int i = 0; i < 300; i++) {
      batch.add(request(IdempotencyKey.of("batch", "k" + i % 100)));
    }

    List<Claim> claims = store.claimAll(batch);

    assertThat(claims).hasSize(300);
    assertThat(claims.subList(0, 100)).allSatisfy(c -> assertThat(c)
        .isEqualTo(new Claim.Acquired(ClaimRules.firstToken(clock.instant()), false, 1, null,
            clock.instant().plus(LEASE))));
    assertThat(claims.subList(100, 300)).allSatisfy(c -> assertThat(c)
        .isEqualTo(new Claim.InProgress(clock.instant().plus(LEASE))));
  }

  @Test
  void oversizedPayloadsAreRefusedBeforeRedis() {
    RedisStore small = RedisStore.builder(RedisServers.Standalone.CLIENT).keyPrefix(prefix)
        .maxPayloadBytes(10).build();
    IdempotencyKey key = IdempotencyKey.of("size", "k");
    long token = ((Claim.Acquired) small.claim(request(key))).token();

    assertThatThrownBy(() -> small.complete(key, token, Outcome.success("b", new byte[11]),
        clock.instant(), RETENTION)).isInstanceOf(PayloadTooLargeException.class);
    assertThatThrownBy(() -> small.checkpoint(key, token, dev.once.Checkpoint.of("c", new byte[11]),
        clock.instant())).isInstanceOf(PayloadTooLargeException.class);

    assertThat(small.find(key)).get().satisfies(r -> {
      assertThat(r.status()).isEqualTo(Status.IN_PROGRESS);
      assertThat(r.checkpoint()).isNull();
    });
    assertThat(small.maxPayloadBytes()).isEqualTo(10);
    small.close();
  }

  @Test
  void storeFromAUriOwnsItsClient() {
    try (RedisStore fromUri = RedisStore.builder(SERVER.uri()).keyPrefix(prefix).build()) {
      IdempotencyKey key = IdempotencyKey.of("uri", "k");
      assertThat(fromUri.claim(request(key))).isInstanceOf(Claim.Acquired.class);
      assertThat(store.claim(request(key))).isInstanceOf(Claim.InProgress.class);
      assertThat(fromUri.toString()).contains(SERVER.uri()).contains(prefix);
    }
  }

  @Test
  void badConfigurationIsRejectedClearly() {
    assertThatThrownBy(() -> RedisStore.builder(RedisServers.Standalone.CLIENT).keyPrefix("a{b}"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("braces");
    assertThatThrownBy(() -> RedisStore.builder(RedisServers.Standalone.CLIENT).keyPrefix(""))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> RedisStore.builder(RedisServers.Standalone.CLIENT)
        .commandTimeout(Duration.ZERO)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> Durability.replicas(0, Duration.ofSeconds(1)))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> RedisStore.builder("http://127.0.0.1:1").build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not a Redis URI");
    assertThatThrownBy(() -> RedisStore.builder((String) null)).isInstanceOf(NullPointerException.class);
  }

  @Test
  void anUnreachableServerFailsTheBuildWithinTheTimeout() {
    long start = System.nanoTime();
    assertThatThrownBy(() -> RedisStore.builder("redis://127.0.0.1:1")
        .commandTimeout(Duration.ofMillis(500)).build())
        .isInstanceOf(StoreUnavailableException.class)
        .hasMessageContaining("cannot connect to redis://127.0.0.1:1");
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5));
  }

  @Test
  void passwordsStayOutOfMessages() {
    assertThatThrownBy(() -> RedisStore.builder("redis://secret@127.0.0.1:1")
        .commandTimeout(Duration.ofMillis(300)).build())
        .isInstanceOf(StoreUnavailableException.class)
        .hasMessageNotContaining("secret");
  }
}
