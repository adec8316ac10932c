package dev.once.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.StoreUnavailableException;
import dev.once.redis.internal.KeyLayout;
import dev.once.redis.testing.RedisClusterProcess;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.Completion;
import dev.once.spi.Outcome;
import dev.once.spi.Status;
import dev.once.testkit.ManualClock;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.SlotHash;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** Redis Cluster specifics: slots moving under a running store, and the cluster URI form. */
class RedisClusterTest {

  /**
   * The first command connects to the cluster and reads its topology: more than the default 2 s
   * on a machine under stress-ng. What these tests assert is what comes back, not how fast.
   */
  private static final Duration LOADED_MACHINE = Duration.ofSeconds(15);


  private static final RedisClusterProcess CLUSTER = RedisServers.Cluster.CLUSTER;
  private static final Fingerprint FP = Fingerprint.of("request");
  private static final Duration LEASE = Duration.ofSeconds(30);
  private static final Duration RETENTION = Duration.ofHours(1);

  private final ManualClock clock = new ManualClock();
  private final String prefix = "c-" + UUID.randomUUID().toString().substring(0, 8) + ":";

  private ClaimRequest request(IdempotencyKey key) {
    return new ClaimRequest(key, FP, clock.instant(), LEASE, RETENTION);
  }

  @Test
  void theStoreFollowsASlotMigratedWhileItRuns() {
    KeyLayout layout = new KeyLayout(prefix);
    // Three keys with one hash tag, hence one slot, which is then moved with all of them.
    IdempotencyKey done = IdempotencyKey.of("moved", "{m}done");
    IdempotencyKey running = IdempotencyKey.of("moved", "{m}running");
    IdempotencyKey fresh = IdempotencyKey.of("moved", "{m}fresh");
    int slot = SlotHash.getSlot(layout.record(done));
    assertThat(SlotHash.getSlot(layout.record(running))).isEqualTo(slot);
    assertThat(SlotHash.getSlot(layout.record(fresh))).isEqualTo(slot);

    // A client without adaptive topology refresh: only the MOVED redirect can lead it.
    RedisClusterClient client = RedisClusterClient.create(CLUSTER.uri());
    try (RedisStore store = RedisStore.builder(client).keyPrefix(prefix).build()) {
      long doneToken = ((Claim.Acquired) store.claim(request(done))).token();
      store.complete(done, doneToken, text("charged"), clock.instant(), RETENTION);
      long runningToken = ((Claim.Acquired) store.claim(request(running))).token();
      int source = CLUSTER.ownerOf(slot);
      int target = (source + 1) % CLUSTER.nodes().size();
      long movedBefore = movedErrors(source);

      CLUSTER.migrateSlot(slot, target);

      assertThat(CLUSTER.keysInSlot(target, slot)).isEqualTo(2); // the two records
      assertThat(CLUSTER.keysInSlot(source, slot)).isZero();
      assertThat(store.claim(request(done))).isEqualTo(new Claim.Replay(text("charged"), doneToken));
      assertThat(movedErrors(source)).as("MOVED answers from the old owner")
          .isGreaterThan(movedBefore);
      store.complete(running, runningToken, text("late"), clock.instant(), RETENTION);
      assertThat(store.claim(request(running))).isEqualTo(new Claim.Replay(text("late"), runningToken));
      assertThat(store.claimAll(List.of(request(fresh), request(done), request(fresh))))
          .extracting(c -> c.getClass().getSimpleName())
          .containsExactly("Acquired", "Replay", "InProgress");
      assertThat(CLUSTER.keysInSlot(target, slot)).isEqualTo(3); // the three records

      clock.advance(RETENTION);
      assertThat(store.reapExpiredLeases(clock.instant(), 1000)).isEqualTo(1);
      assertThat(store.purgeExpired(clock.instant(), 1000)).isEqualTo(3);
      assertThat(CLUSTER.keysInSlot(target, slot)).isZero();
    } finally {
      client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
    }
  }

  @Test
  void aClusterUriMakesAClusterStore() {
    try (RedisStore store = RedisStore.builder(CLUSTER.storeUri()).keyPrefix(prefix).build()) {
      List<ClaimRequest> batch = new ArrayList<>();
      for (int i = 0; i < 50; i++) {
        batch.add(request(IdempotencyKey.of("uri", "k" + i)));
      }
      List<Claim> claims = store.claimAll(batch);
      assertThat(claims).allSatisfy(c -> assertThat(c).isInstanceOf(Claim.Acquired.class));
      // The same requests again are their claimants' own (re-sent); anyone else's are in progress.
      assertThat(store.claimAll(batch)).isEqualTo(claims);
      assertThat(store.claimAll(batch.stream().map(r -> request(r.key())).toList()))
          .allSatisfy(c -> assertThat(c).isInstanceOf(Claim.InProgress.class));
      // A batch completion spans every master, one pipelined round trip each.
      List<Completion> completions = new ArrayList<>();
      for (int i = 0; i < batch.size(); i++) {
        completions.add(new Completion(batch.get(i).key(),
            ((Claim.Acquired) claims.get(i)).token(), text("k" + i)));
      }
      assertThat(store.completeAll(completions, clock.instant(), RETENTION)).isEmpty();
      assertThat(store.claimAll(batch)).allSatisfy(c -> assertThat(c).isInstanceOf(Claim.Replay.class));
      assertThat(store.toString()).contains("redis-cluster://");
    }
  }

  @Test
  void waitForReplicasAsksTheMasterThatTookTheWrite() {
    // The test cluster has no replicas: WAIT reaches the right master and reports 0 of 1.
    try (RedisStore store = RedisStore.builder(RedisServers.Cluster.CLIENT).keyPrefix(prefix)
        .commandTimeout(LOADED_MACHINE)
        .durability(Durability.replicas(1, Duration.ofMillis(50))).build()) {
      assertThatThrownBy(() -> store.claim(request(IdempotencyKey.of("wait", "k"))))
          .isInstanceOf(StoreUnavailableException.class)
          .hasMessageContaining("only 0 of 1 replicas acknowledged the claim of wait/k");
      assertThatThrownBy(() -> store.claimAll(List.of(request(IdempotencyKey.of("wait", "a")),
          request(IdempotencyKey.of("wait", "b")), request(IdempotencyKey.of("wait", "c")))))
          .isInstanceOf(StoreUnavailableException.class)
          .hasMessageContaining("only 0 of 1 replicas acknowledged the batch claim of 3 keys");
      // The failed batch gave its claims back: the next claim retries them at once.
      for (String k : List.of("a", "b", "c")) {
        assertThat(store.find(IdempotencyKey.of("wait", k)).orElseThrow().status())
            .isEqualTo(Status.FAILED);
      }
    }
    try (RedisStore store = RedisStore.builder(RedisServers.Cluster.CLIENT).keyPrefix(prefix)
        .commandTimeout(LOADED_MACHINE)
        .build()) {
      List<Completion> completions = new ArrayList<>();
      for (String k : List.of("a", "b", "c")) {
        Claim claim = store.claim(request(IdempotencyKey.of("wait", k)));
        completions.add(new Completion(IdempotencyKey.of("wait", k),
            ((Claim.Acquired) claim).token(), text(k)));
      }
      try (RedisStore waiting = RedisStore.builder(RedisServers.Cluster.CLIENT).keyPrefix(prefix)
        .commandTimeout(LOADED_MACHINE)
          .durability(Durability.replicas(1, Duration.ofMillis(50))).build()) {
        assertThatThrownBy(() -> waiting.completeAll(completions, clock.instant(), RETENTION))
            .isInstanceOf(StoreUnavailableException.class)
            .hasMessageContaining("only 0 of 1 replicas acknowledged the batch completion of 3"
                + " keys");
      }
    }
  }

  /**
   * Issue 15, item 1, in a cluster: a batch spread over three masters, one of which is killed. The
   * claims on the dead master go unanswered; the claims on the live masters (also those answered
   * after the unanswered ones) were made, and are released before the batch throws. A private
   * cluster, told to keep serving the slots it still covers.
   */
  @Test
  void aBatchWithOneMasterDownLeavesNothingClaimedOnTheOthers() {
    try (RedisClusterProcess cluster = RedisClusterProcess.start(3)) {
      for (var node : cluster.nodes()) {
        node.call("CONFIG", "SET", "cluster-require-full-coverage", "no");
      }
      KeyLayout layout = new KeyLayout(prefix);
      List<List<IdempotencyKey>> byNode = List.of(new ArrayList<>(), new ArrayList<>(),
          new ArrayList<>());
      for (int i = 0; byNode.stream().anyMatch(keys -> keys.size() < 3); i++) {
        IdempotencyKey key = IdempotencyKey.of("down", "k" + i);
        // Slots were split evenly in node order (RedisClusterProcess), none has moved.
        int node = SlotHash.getSlot(layout.record(key)) * 3 / RedisClusterProcess.SLOTS;
        if (byNode.get(node).size() < 3) {
          byNode.get(node).add(key);
        }
      }
      List<ClaimRequest> batch = new ArrayList<>();
      for (int i = 0; i < 3; i++) {
        for (List<IdempotencyKey> keys : byNode) {
          batch.add(request(keys.get(i)));
        }
      }
      try (RedisStore store = RedisStore.builder(cluster.storeUri()).keyPrefix(prefix)
          .commandTimeout(Duration.ofMillis(500)).build()) {
        assertThat(store.find(batch.get(0).key())).isEmpty(); // connected, topology known

        cluster.nodes().get(1).kill();
        long start = System.nanoTime();
        assertThatThrownBy(() -> store.claimAll(batch))
            .isInstanceOf(StoreUnavailableException.class)
            .satisfies(e -> assertThat(((StoreUnavailableException) e).mayHaveBeenApplied())
                .isTrue());
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5));

        for (int node : new int[] {0, 2}) {
          for (IdempotencyKey key : byNode.get(node)) {
            assertThat(store.find(key)).get().satisfies(r -> {
              assertThat(r.status()).as("%s", key).isEqualTo(Status.FAILED);
              assertThat(r.lastError()).startsWith("released: the batch claim failed");
            });
            assertThat(store.claim(request(key))).as("%s", key).isInstanceOf(Claim.Acquired.class);
          }
        }

        // The dead master comes back (empty: no persistence): nothing was sent to it late.
        cluster.nodes().get(1).restart();
        for (IdempotencyKey key : byNode.get(1)) {
          assertThat(awaitRecovery(() -> store.claim(request(key)))).as("%s", key)
              .isInstanceOf(Claim.Acquired.class);
        }
      }
    }
  }

  /** Retries {@code call} while the store is unavailable, for at most 30 s. */
  private static <T> T awaitRecovery(java.util.function.Supplier<T> call) {
    long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(30);
    while (true) {
      try {
        return call.get();
      } catch (StoreUnavailableException e) {
        if (System.nanoTime() > deadline) {
          throw e;
        }
      }
    }
  }

  private static long movedErrors(int node) {
    String stats = (String) CLUSTER.nodes().get(node).call("INFO", "errorstats");
    Matcher m = Pattern.compile("errorstat_MOVED:count=(\\d+)").matcher(stats);
    return m.find() ? Long.parseLong(m.group(1)) : 0;
  }

  private static Outcome text(String s) {
    return Outcome.success("text/plain", s.getBytes(StandardCharsets.UTF_8));
  }
}
