package dev.once.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.PayloadTooLargeException;
import dev.once.StoreUnavailableException;
import dev.once.redis.internal.Expiry;
import dev.once.redis.internal.KeyLayout;
import dev.once.redis.internal.RecordFormat;
import dev.once.redis.internal.RedisConnector;
import dev.once.redis.testing.RedisServerProcess;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.ClaimRules;
import dev.once.spi.Outcome;
import dev.once.spi.Status;
import dev.once.testkit.ManualClock;
import dev.once.testkit.Racers;
import io.lettuce.core.RedisClient;
import io.lettuce.core.cluster.RedisClusterClient;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** What the conformance suite cannot see: the Redis layout, the commands, configuration errors. */
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
    return new String(new KeyLayout(prefix).record(key), StandardCharsets.ISO_8859_1);
  }

  @Test
  void aRecordIsOneStringUnderOneKey() {
    IdempotencyKey key = IdempotencyKey.of("payments.charge", "acme", "order {17} 42");

    ClaimRequest request = new ClaimRequest(key, FP, clock.instant(), LEASE, RETENTION, -2);

    long token = ((Claim.Acquired) store.claim(request)).token();

    assertThat(keysOfThisStore()).containsExactly(recordKey(key));
    assertThat(recordKey(key)).isEqualTo(prefix + " payments.charge acme order {17} 42");
    assertThat(SERVER.call("TYPE", recordKey(key))).isEqualTo("string");
    String value = (String) SERVER.call("GET", recordKey(key));
    assertThat(value)
        .startsWith(String.format("2 I %016d %016d ", token, RecordFormat.micros(clock.instant().plus(LEASE))));
    // The claim id closes the head, as 16 hex digits of its 64 bits.
    assertThat(value.substring(104, 122)).isEqualTo(" fffffffffffffffe\n");
    assertThat(store.find(key)).get().extracting(r -> r.claimId()).isEqualTo(-2L);
    assertThat(new KeyLayout(prefix).idempotencyKey(recordKey(key).getBytes(StandardCharsets.US_ASCII)))
        .isEqualTo(key);
  }

  @Test
  void storesWhosePrefixesNestShareNothing() {
    IdempotencyKey key = IdempotencyKey.of("eu:payments", "k");
    try (RedisStore nested = RedisStore.builder(RedisServers.Standalone.CLIENT)
        .keyPrefix(prefix + "r:").build()) {
      store.claim(request(key));
      nested.claim(request(IdempotencyKey.of("payments", "k")));
      clock.advance(RETENTION);

      assertThat(store.reapExpiredLeases(clock.instant(), 100)).isEqualTo(1);
      assertThat(store.purgeExpired(clock.instant(), 100)).isEqualTo(1);
      assertThat(nested.find(IdempotencyKey.of("payments", "k"))).get()
          .extracting(r -> r.status()).isEqualTo(Status.IN_PROGRESS);
      assertThat(nested.purgeExpired(clock.instant(), 100)).isEqualTo(1);
    }
  }

  @Test
  void newKeysAndReplaysAreClaimedWithOneSetAndNoScript() {
    IdempotencyKey key = IdempotencyKey.of("native", "k");
    assertThat(store.find(key)).isEmpty(); // the store connects on its first call: HELLO, INFO
    SERVER.call("CONFIG", "RESETSTAT");

    long token = ((Claim.Acquired) store.claim(request(key))).token();
    assertThat(commandCalls()).containsOnlyKeys("set");
    store.complete(key, token, Outcome.success("text/plain", new byte[] {1}), clock.instant(),
        RETENTION);
    SERVER.call("CONFIG", "RESETSTAT");
    assertThat(store.claim(request(key))).isInstanceOf(Claim.Replay.class);
    assertThat(store.claim(new ClaimRequest(key, Fingerprint.of("other"), clock.instant(), LEASE,
        RETENTION))).isInstanceOf(Claim.Mismatch.class);

    assertThat(commandCalls()).containsOnlyKeys("set").containsEntry("set", 2L);
  }

  @Test
  void aResentClaimIsOneSetAndNoScriptAndIsAnsweredAsItsClaimantsOwn() {
    IdempotencyKey key = IdempotencyKey.of("native", "resent");
    ClaimRequest claim = request(key);
    Claim first = store.claim(claim);
    String stored = (String) SERVER.call("GET", recordKey(key));
    SERVER.call("CONFIG", "RESETSTAT");

    Claim again = store.claim(claim); // the same bytes again, as Lettuce re-sends them

    assertThat(again).isEqualTo(first);
    assertThat(commandCalls()).containsOnlyKeys("set").containsEntry("set", 1L);
    assertThat(SERVER.call("GET", recordKey(key))).isEqualTo(stored);
    assertThat(store.claim(request(key))).isInstanceOf(Claim.InProgress.class);
    // Past its lease the claim is no longer live: the same request takes it over like any other.
    clock.advance(LEASE);
    assertThat(store.claim(new ClaimRequest(key, FP, clock.instant(), LEASE, RETENTION,
        claim.claimId()))).isEqualTo(new Claim.Acquired(((Claim.Acquired) first).token() + 1,
        true, 2, null, clock.instant().plus(LEASE)));
  }

  @Test
  void aRepeatedCompletionOrFailureIsAcknowledgedWithoutAWrite() {
    IdempotencyKey done = IdempotencyKey.of("repeat", "done");
    long token = ((Claim.Acquired) store.claim(request(done))).token();
    Outcome outcome = Outcome.success("application/json", "{\"id\":7}".getBytes(StandardCharsets.UTF_8));
    store.complete(done, token, outcome, clock.instant(), RETENTION);
    String completed = (String) SERVER.call("GET", recordKey(done));
    SERVER.call("CONFIG", "RESETSTAT");

    clock.advance(Duration.ofSeconds(5));
    store.complete(done, token, outcome, clock.instant(), RETENTION);
    assertThat(store.completeAll(List.of(new dev.once.spi.Completion(done, token, outcome)),
        clock.instant(), RETENTION)).isEmpty();

    // Acknowledged in the script's failure branch: read, compared, nothing written.
    assertThat(commandCalls()).containsOnlyKeys("evalsha", "get").containsEntry("evalsha", 2L);
    assertThat(SERVER.call("GET", recordKey(done))).isEqualTo(completed);
    for (Outcome other : List.of(Outcome.success("application/json", "{\"id\":8}"
            .getBytes(StandardCharsets.UTF_8)), Outcome.success("text/plain", "{\"id\":7}"
            .getBytes(StandardCharsets.UTF_8)), Outcome.of(Outcome.Kind.FAILURE,
            "application/json", "{\"id\":7}".getBytes(StandardCharsets.UTF_8)))) {
      assertThatThrownBy(() -> store.complete(done, token, other, clock.instant(), RETENTION))
          .isInstanceOf(dev.once.LeaseLostException.class);
    }
    assertThatThrownBy(() -> store.complete(done, token + 1, outcome, clock.instant(), RETENTION))
        .isInstanceOf(dev.once.LeaseLostException.class);
    assertThatThrownBy(() -> store.fail(done, token, "boom", clock.instant(), RETENTION))
        .isInstanceOf(dev.once.LeaseLostException.class);

    IdempotencyKey failed = IdempotencyKey.of("repeat", "failed");
    long failedToken = ((Claim.Acquired) store.claim(request(failed))).token();
    store.checkpoint(failed, failedToken, dev.once.Checkpoint.of("charged", new byte[] {1, 2}),
        clock.instant());
    store.fail(failed, failedToken, "gateway: ünïcode", clock.instant(), RETENTION);
    String failedValue = (String) SERVER.call("GET", recordKey(failed));
    store.fail(failed, failedToken, "gateway: ünïcode", clock.instant().plusSeconds(1), RETENTION);
    assertThat(SERVER.call("GET", recordKey(failed))).isEqualTo(failedValue);
    for (String other : List.of("gateway: ünïcodE", "gateway: ünïcode ", "")) {
      assertThatThrownBy(() -> store.fail(failed, failedToken, other, clock.instant(), RETENTION))
          .isInstanceOf(dev.once.LeaseLostException.class);
    }
    assertThatThrownBy(() -> store.complete(failed, failedToken, outcome, clock.instant(),
        RETENTION)).isInstanceOf(dev.once.LeaseLostException.class);
    assertThat(SERVER.call("GET", recordKey(failed))).isEqualTo(failedValue);
  }

  @Test
  void aBatchWhoseMiddleKeyHoldsAnotherTypeReleasesTheKeysAnsweredAfterIt() {
    // Issue 15, item 1: the third key's SET NX GET ran, but its answer came after the failed one.
    List<ClaimRequest> batch = List.of(request(IdempotencyKey.of("partial", "a")),
        request(IdempotencyKey.of("partial", "b")), request(IdempotencyKey.of("partial", "c")));
    SERVER.call("HSET", recordKey(batch.get(1).key()), "field", "value");

    assertThatThrownBy(() -> store.claimAll(batch))
        .isInstanceOf(StoreUnavailableException.class)
        .hasMessageContaining("claim of partial/b").hasMessageContaining("WRONGTYPE")
        .satisfies(e -> assertThat(((StoreUnavailableException) e).mayHaveBeenApplied())
            .as("claims were made and released").isTrue());

    for (int i : new int[] {0, 2}) {
      assertThat(store.find(batch.get(i).key())).get().satisfies(r -> {
        assertThat(r.status()).isEqualTo(Status.FAILED);
        assertThat(r.lastError()).startsWith("released: the batch claim failed");
      });
    }
    assertThat(SERVER.call("TYPE", recordKey(batch.get(1).key()))).isEqualTo("hash");
    // A single claim refused by Redis changed nothing, and says so.
    assertThatThrownBy(() -> store.claim(batch.get(1)))
        .isInstanceOf(StoreUnavailableException.class)
        .satisfies(e -> assertThat(((StoreUnavailableException) e).mayHaveBeenApplied()).isFalse());
    SERVER.call("DEL", recordKey(batch.get(1).key()));
    assertThat(store.claimAll(batch)).allSatisfy(c -> assertThat(c).isInstanceOf(Claim.Acquired.class));
  }

  @Test
  void aRecordOfFormat1IsReadWithAnUnknownClaimIdAndRewrittenInFormat2ByTheNextClaim() {
    IdempotencyKey key = IdempotencyKey.of("format", "v1");
    long token = ((Claim.Acquired) store.claim(request(key))).token();
    String v2 = (String) SERVER.call("GET", recordKey(key));
    // Format 1 is format 2 without the claim id (" " and 16 hex digits before the newline).
    String v1 = "1" + v2.substring(1, 104) + v2.substring(121);
    SERVER.call("SET", recordKey(key), v1);

    assertThat(store.find(key)).get().satisfies(r -> {
      assertThat(r.claimId()).isZero();
      assertThat(r.token()).isEqualTo(token);
      assertThat(r.status()).isEqualTo(Status.IN_PROGRESS);
    });
    assertThat(store.claim(request(key))).isInstanceOf(Claim.InProgress.class);
    // The writes under the token refuse a record of format 1 (its claimant ran an older version).
    assertThatThrownBy(() -> store.complete(key, token, Outcome.success("text/plain", new byte[0]),
        clock.instant(), RETENTION)).isInstanceOf(dev.once.LeaseLostException.class);
    assertThat(SERVER.call("GET", recordKey(key))).isEqualTo(v1);

    clock.advance(LEASE);
    ClaimRequest takeover = request(key);
    assertThat(store.claim(takeover)).isInstanceOf(Claim.Acquired.class);
    assertThat((String) SERVER.call("GET", recordKey(key))).startsWith("2 I ");
    assertThat(store.find(key)).get().satisfies(r -> {
      assertThat(r.claimId()).isEqualTo(takeover.claimId());
      assertThat(r.token()).isEqualTo(token + 1);
    });
    assertCanonical(key);
  }

  /** Calls per command since the last {@code CONFIG RESETSTAT}, without INFO itself. */
  private static java.util.Map<String, Long> commandCalls() {
    java.util.Map<String, Long> calls = new java.util.TreeMap<>();
    for (String line : ((String) SERVER.call("INFO", "commandstats")).split("\r?\n")) {
      java.util.regex.Matcher m = java.util.regex.Pattern
          .compile("^cmdstat_([a-z|]+):calls=(\\d+)").matcher(line);
      if (m.find() && !m.group(1).equals("info") && !m.group(1).startsWith("config")) {
        calls.put(m.group(1), Long.parseLong(m.group(2)));
      }
    }
    return calls;
  }

  @ParameterizedTest(name = "on {0} threads")
  @EnumSource(Racers.class)
  @Tag("races")
  void takeoversRacingOnOneKeyLeaveOneWinner(Racers racers) throws Exception {
    IdempotencyKey key = IdempotencyKey.of("race", "k");
    long first = ((Claim.Acquired) store.claim(request(key))).token();
    clock.advance(LEASE); // the lease passed: every racer may take over, one must win

    List<Claim> claims = race(racers, 8, () -> store.claim(request(key)));

    assertThat(claims).filteredOn(c -> c instanceof Claim.Acquired).singleElement()
        .isEqualTo(new Claim.Acquired(first + 1, true, 2, null, clock.instant().plus(LEASE)));
    assertThat(claims).filteredOn(c -> c instanceof Claim.InProgress).hasSize(7);

    // The winner fails; the retries race the same way.
    store.fail(key, first + 1, "boom", clock.instant(), RETENTION);
    List<Claim> retries = race(racers, 8, () -> store.claim(request(key)));
    assertThat(retries).filteredOn(c -> c instanceof Claim.Acquired).singleElement()
        .isEqualTo(new Claim.Acquired(first + 2, false, 3, null, clock.instant().plus(LEASE)));
    assertThat(store.find(key)).get().satisfies(r -> {
      assertThat(r.token()).isEqualTo(first + 2);
      assertThat(r.lastError()).isEqualTo("boom");
    });
  }

  private static List<Claim> race(Racers racers, int threads,
      java.util.concurrent.Callable<Claim> claim) throws Exception {
    java.util.concurrent.ExecutorService pool = racers.pool(threads);
    try {
      java.util.concurrent.CyclicBarrier start = new java.util.concurrent.CyclicBarrier(threads);
      List<java.util.concurrent.Future<Claim>> futures = new ArrayList<>();
      for (int i = 0; i < threads; i++) {
        futures.add(pool.submit(() -> {
          start.await();
          return claim.call();
        }));
      }
      List<Claim> claims = new ArrayList<>();
      for (java.util.concurrent.Future<Claim> f : futures) {
        claims.add(f.get());
      }
      return claims;
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void aValueThatIsNotARecordIsRefusedAndLeftAlone() {
    IdempotencyKey key = IdempotencyKey.of("foreign", "k");
    SERVER.call("SET", recordKey(key), "not a record");

    assertThatThrownBy(() -> store.claim(request(key))).isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("is not a record of Once").hasMessageContaining(key.toString());
    assertThatThrownBy(() -> store.find(key)).isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> store.complete(key, 1, Outcome.success("text/plain", new byte[0]),
        clock.instant(), RETENTION)).isInstanceOf(dev.once.LeaseLostException.class);
    clock.advance(Duration.ofDays(365));
    assertThat(store.purgeExpired(clock.instant(), 100)).isZero();
    assertThat(store.reapExpiredLeases(clock.instant(), 100)).isZero();

    assertThat(SERVER.call("GET", recordKey(key))).isEqualTo("not a record");
  }

  @Test
  void theScriptsWriteTheRecordFormatByteForByteAsJavaDoes() {
    IdempotencyKey key = IdempotencyKey.of("format", "tenant-1", "k {x} 1");
    long token = ((Claim.Acquired) store.claim(request(key))).token();
    assertCanonical(key);
    clock.advance(Duration.ofSeconds(1));
    store.checkpoint(key, token, dev.once.Checkpoint.of("charged", new byte[] {0, '\n', (byte) 0xff}),
        clock.instant());
    assertCanonical(key);
    clock.advance(Duration.ofSeconds(1));
    store.extend(key, token, clock.instant(), Duration.ofHours(3)); // past the retention
    assertCanonical(key);
    assertThat(store.find(key)).get().satisfies(r -> {
      assertThat(r.expiresAt()).isEqualTo(clock.instant().plus(Duration.ofHours(3)));
      assertThat(r.checkpoint().data()).containsExactly(0, '\n', 0xff);
    });
    store.fail(key, token, "boom: ünïcode", clock.instant(), RETENTION);
    assertCanonical(key);
    Claim.Acquired retry = (Claim.Acquired) store.claim(request(key));
    assertThat(retry.checkpoint().name()).isEqualTo("charged");
    assertCanonical(key);
    store.checkpoint(key, retry.token(), dev.once.Checkpoint.of("shipped", new byte[0]),
        clock.instant());
    assertCanonical(key);
    store.complete(key, retry.token(), Outcome.success("application/json; charset=utf-8",
        "{\"ok\":\"ü\"}".getBytes(StandardCharsets.UTF_8)), clock.instant(), RETENTION);
    assertCanonical(key);
    assertThat(store.find(key)).get().satisfies(r -> {
      assertThat(r.status()).isEqualTo(Status.COMPLETED);
      assertThat(r.token()).isEqualTo(token + 1);
      assertThat(r.attempts()).isEqualTo(2);
      assertThat(r.lastError()).isEqualTo("boom: ünïcode");
      assertThat(r.checkpoint().name()).isEqualTo("shipped");
      assertThat(new String(r.outcome().body(), StandardCharsets.UTF_8)).isEqualTo("{\"ok\":\"ü\"}");
      assertThat(r.expiresAt()).isEqualTo(clock.instant().plus(RETENTION));
    });
  }

  /** The value in Redis is exactly what RecordFormat writes for the record it reads back. */
  private void assertCanonical(IdempotencyKey key) {
    try (var connection = RedisServers.Standalone.CLIENT.connect(
        io.lettuce.core.codec.ByteArrayCodec.INSTANCE)) {
      byte[] stored = connection.sync().get(new KeyLayout(prefix).record(key));
      assertThat(RecordFormat.encode(RecordFormat.decode(key, stored))).isEqualTo(stored);
    }
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
    long margin = Expiry.MARGIN.toMillis();

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
  void aRecordRedisAlreadyExpiredIsAbsent() {
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
  void purgeAndReapKeepTheirLimitsOverManyScanPages() {
    List<ClaimRequest> batch = new ArrayList<>();
    for (int i = 0; i < 2_500; i++) {
      batch.add(request(IdempotencyKey.of("purge", "k" + i)));
    }
    List<Claim> claims = store.claimAll(batch);
    for (int i = 0; i < 2_500; i += 2) {
      store.complete(batch.get(i).key(), ((Claim.Acquired) claims.get(i)).token(),
          Outcome.success("text/plain", new byte[0]), clock.instant(), RETENTION);
    }
    clock.advance(LEASE);

    assertThat(store.reapExpiredLeases(clock.instant(), 1_100)).isEqualTo(1_100);
    assertThat(store.reapExpiredLeases(clock.instant(), 1_000)).isEqualTo(150);
    assertThat(store.find(batch.get(1).key())).get().satisfies(r -> {
      assertThat(r.status()).isEqualTo(Status.FAILED);
      assertThat(r.lastError()).isEqualTo("lease expired");
      assertThat(r.updatedAt()).isEqualTo(clock.instant());
    });
    assertThat(store.purgeExpired(clock.instant(), 100)).isZero();
    clock.advance(RETENTION);
    assertThat(store.purgeExpired(clock.instant(), 1_500)).isEqualTo(1_500);
    assertThat(store.purgeExpired(clock.instant(), 2_000)).isEqualTo(1_000);
    assertThat(keysOfThisStore()).isEmpty();
  }

  @Test
  void purgeGoesByEachRecordsOwnExpiryToTheMicrosecond() {
    IdempotencyKey later = IdempotencyKey.of("bound", "later");
    IdempotencyKey sooner = IdempotencyKey.of("bound", "sooner");
    Instant claimedAt = clock.instant();
    long laterToken = ((Claim.Acquired) store.claim(request(later))).token();
    long soonerToken = ((Claim.Acquired) store.claim(request(sooner))).token();
    clock.advance(Duration.ofSeconds(10));
    // Completed 10 s after the claim: the expiry moves 10 s later; a shorter retention, earlier.
    store.complete(later, laterToken, Outcome.success("text/plain", new byte[] {1}),
        clock.instant(), RETENTION);
    store.complete(sooner, soonerToken, Outcome.success("text/plain", new byte[] {2}),
        clock.instant(), Duration.ofMinutes(1));

    clock.set(clock.instant().plus(Duration.ofMinutes(1)));
    assertThat(store.purgeExpired(clock.instant(), 100)).isEqualTo(1);
    assertThat(store.find(sooner)).isEmpty();

    clock.set(claimedAt.plus(RETENTION));
    assertThat(store.purgeExpired(clock.instant(), 100)).isZero();
    assertThat(store.find(later)).get().extracting(r -> r.status()).isEqualTo(Status.COMPLETED);
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

  /**
   * Records keep times that Lua compares exactly, up to the year 2255. A retention reaching past
   * it (a "keep it forever" of 300 years) used to fail every call as StoreUnavailableException,
   * retryable and marked "may have been applied", so a consumer would have had it delivered again
   * for good (found by review). It is bad input: IllegalArgumentException, before anything is
   * sent, nothing stored, and the work never runs.
   */
  @Test
  void aRetentionPastTheYear2255IsRefusedAsBadInputWithNothingStored() {
    Duration forever = Duration.ofDays(300 * 366);
    IdempotencyKey key = IdempotencyKey.of("forever", "k");
    ClaimRequest request = new ClaimRequest(key, FP, clock.instant(), LEASE, forever);

    assertThatThrownBy(() -> store.claim(request)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("outside what the Redis store can hold");
    assertThatThrownBy(() -> store.claimAll(List.of(request(IdempotencyKey.of("forever", "a")),
        request))).isInstanceOf(IllegalArgumentException.class);
    assertThat(store.claimAsync(request, Runnable::run).toCompletableFuture())
        .failsWithin(java.time.Duration.ofSeconds(10)).withThrowableThat()
        .withCauseInstanceOf(IllegalArgumentException.class);
    assertThat(store.find(key)).isEmpty();
    assertThat(store.find(IdempotencyKey.of("forever", "a"))).isEmpty();

    long token = ((Claim.Acquired) store.claim(request(key))).token();
    assertThatThrownBy(() -> store.complete(key, token, Outcome.success("text/plain",
        new byte[] {1}), clock.instant(), forever)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> store.completeAll(List.of(new dev.once.spi.Completion(key, token,
        Outcome.success("text/plain", new byte[] {1}))), clock.instant(), forever))
        .isInstanceOf(IllegalArgumentException.class);
    assertThat(store.completeAsync(key, token, Outcome.success("text/plain", new byte[] {1}),
        clock.instant(), forever, Runnable::run).toCompletableFuture())
        .failsWithin(java.time.Duration.ofSeconds(10)).withThrowableThat()
        .withCauseInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> store.fail(key, token, "x", clock.instant(), forever))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> store.release(key, token, "x", clock.instant(), forever))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> store.extend(key, token, clock.instant(), forever))
        .isInstanceOf(IllegalArgumentException.class);
    assertThat(store.find(key)).get().extracting(r -> r.status()).isEqualTo(Status.IN_PROGRESS);

    dev.once.Once once = dev.once.Once.builder(store).clock(clock).retention(forever).build();
    java.util.concurrent.atomic.AtomicInteger runs = new java.util.concurrent.atomic.AtomicInteger();
    assertThatThrownBy(() -> once.call(IdempotencyKey.of("forever", "once"), FP,
        dev.once.Codecs.utf8(), attempt -> "ran " + runs.incrementAndGet()))
        .isInstanceOf(IllegalArgumentException.class);
    assertThat(runs).hasValue(0);
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
  void aServerOlderThanRedis7IsRefusedByVersion() {
    assertThat(RedisConnector.versionProblem("# Server\r\nredis_version:6.2.14\r\nredis_mode:standalone\r\n"))
        .contains("runs Redis 6.2.14").contains("needs Redis 7.0 or newer");
    assertThat(RedisConnector.versionProblem("# Server\r\nredis_version:7.0.15\r\n")).isNull();
    assertThat(RedisConnector.versionProblem("redis_version:8.2.1")).isNull();
    assertThat(RedisConnector.versionProblem("# Server\r\n")).isNull(); // unknown: let through
    assertThat(RedisConnector.versionProblem((String) SERVER.call("INFO", "server"))).isNull();
  }

  @Test
  void anUnreachableServerFailsTheFirstCallWithinTheTimeoutNotTheBuild() {
    long start = System.nanoTime();
    try (RedisStore unreachable = RedisStore.builder("redis://127.0.0.1:1")
        .commandTimeout(Duration.ofMillis(500)).build()) {
      assertThatThrownBy(() -> unreachable.claim(request(IdempotencyKey.of("down", "k"))))
          .isInstanceOf(StoreUnavailableException.class)
          .hasMessageContaining("cannot connect to redis://127.0.0.1:1 for the claim of down/k")
          .satisfies(e -> assertThat(((StoreUnavailableException) e).mayHaveBeenApplied())
              .as("nothing was sent").isFalse());
      assertThatThrownBy(() -> unreachable.completeAll(List.of(new dev.once.spi.Completion(
          IdempotencyKey.of("down", "k"), 1, Outcome.success("text/plain", new byte[0]))),
          clock.instant(), RETENTION)).isInstanceOf(StoreUnavailableException.class)
          .satisfies(e -> assertThat(((StoreUnavailableException) e).mayHaveBeenApplied())
              .isFalse());
    }
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5));
  }

  @Test
  void aCallersClientsConnectOnTheFirstCallToo() {
    RedisClient client = RedisClient.create("redis://127.0.0.1:1");
    RedisClusterClient clusterClient = RedisClusterClient.create("redis://127.0.0.1:1");
    try (RedisStore standalone = RedisStore.builder(client).commandTimeout(Duration.ofSeconds(1))
        .build();
        RedisStore cluster = RedisStore.builder(clusterClient)
            .commandTimeout(Duration.ofSeconds(1)).build()) {
      for (RedisStore down : List.of(standalone, cluster)) {
        assertThatThrownBy(() -> down.find(IdempotencyKey.of("down", "k")))
            .isInstanceOf(StoreUnavailableException.class)
            .hasMessageContaining("cannot connect to Redis")
            .satisfies(e -> assertThat(((StoreUnavailableException) e).mayHaveBeenApplied())
                .isFalse());
      }
    } finally {
      client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
      clusterClient.shutdown(Duration.ZERO, Duration.ofSeconds(1));
    }
  }

  @Test
  void aClosedStoreRefusesCallsWithoutSendingThem() {
    RedisStore closed = RedisStore.builder(RedisServers.Standalone.CLIENT).keyPrefix(prefix).build();
    closed.close();
    closed.close();
    assertThatThrownBy(() -> closed.claim(request(IdempotencyKey.of("closed", "k"))))
        .isInstanceOf(StoreUnavailableException.class).hasMessageContaining("is closed")
        .satisfies(e -> assertThat(((StoreUnavailableException) e).mayHaveBeenApplied()).isFalse());
    assertThat(keysOfThisStore()).isEmpty();
  }

  @Test
  void passwordsStayOutOfMessages() {
    try (RedisStore unreachable = RedisStore.builder("redis://secret@127.0.0.1:1")
        .commandTimeout(Duration.ofMillis(300)).build()) {
      assertThatThrownBy(() -> unreachable.claim(request(IdempotencyKey.of("down", "k"))))
          .isInstanceOf(StoreUnavailableException.class)
          .hasMessageNotContaining("secret");
      assertThat(unreachable.toString()).doesNotContain("secret");
    }
  }
}
