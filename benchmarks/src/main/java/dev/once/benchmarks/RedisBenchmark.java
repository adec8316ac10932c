package dev.once.benchmarks;

import dev.once.Codecs;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.Once;
import dev.once.redis.RedisStore;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import io.lettuce.core.RedisClient;
import io.lettuce.core.SetArgs;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Once on Redis against the raw commands a hand-written idempotency check uses, through the same client
 * (Lettuce, one multiplexed connection each), side by side in one JMH run:
 *
 * <ul>
 *   <li>{@code raw*New}: {@code SET key started NX PX 30000} then {@code SET key response PX 86400000}:
 *       two round trips, no fingerprint, lease and retention in one TTL, no fencing.
 *   <li>{@code once*New}: {@link Once} over {@link RedisStore}: the claim ({@code SET NX GET PX}),
 *       the logic (empty), the complete script under the fencing token: two round trips.
 *   <li>{@code raw*Replay}: {@code SET key started NX GET PX 30000} on a finished key, answering its
 *       stored value: one round trip (the strongest raw form; Redis 7).
 *   <li>{@code once*Replay}: {@link Once} on a completed key: the claim ({@code SET NX GET PX})
 *       answers the record, decoded and decided: one round trip.
 *   <li>{@code claimAll100} against {@code singleClaims100}: 100 new keys claimed with one pipelined
 *       {@code claimAll} or with 100 sequential claims (throughput counted per claim).
 * </ul>
 *
 * The {@code …1} methods run on 1 thread, in throughput and sample-time modes (for percentiles);
 * the {@code …64} methods on 64 threads. The benchmark starts its own {@code redis-server} (no
 * persistence, a free loopback port), or uses {@code -Donce.bench.redis=redis://host:port}.
 *
 * <pre>
 * java -jar benchmarks/target/benchmarks.jar RedisBenchmark -f 1 -wi 2 -w 3s -i 3 -r 3s
 * </pre>
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(1)
@Warmup(iterations = 2, time = 3)
@Measurement(iterations = 3, time = 3)
@State(Scope.Benchmark)
public class RedisBenchmark {

  static final Fingerprint FP = Fingerprint.of(
      "{\"amount\":1000,\"currency\":\"EUR\",\"customer\":\"cus_42\"}");
  static final String RESPONSE = "{\"id\":\"ch_1\"}";
  static final int REPLAY_KEYS = 1000;
  private static final Duration LEASE = Duration.ofSeconds(30);
  private static final Duration RETENTION = Duration.ofHours(24);

  private PrivateRedisServer server;
  private RedisClient client;
  private StatefulRedisConnection<String, String> raw;
  private RedisStore store;
  private Once once;
  private final String run = UUID.randomUUID().toString().substring(0, 8);
  private final AtomicInteger threads = new AtomicInteger();

  @Setup(Level.Trial)
  public void start() throws IOException, InterruptedException {
    String uri = System.getProperty("once.bench.redis");
    if (uri == null || uri.isBlank()) {
      server = PrivateRedisServer.start();
      uri = server.uri();
    }
    client = RedisClient.create(uri);
    raw = client.connect();
    store = RedisStore.builder(uri).commandTimeout(Duration.ofSeconds(10)).build();
    once = Once.builder(store).lease(LEASE).retention(RETENTION).build();
  }

  @TearDown(Level.Trial)
  public void stop() throws IOException {
    store.close();
    raw.close();
    client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
    if (server != null) {
      server.close();
    }
  }

  /** Per-thread keys: new ones never repeat; replay ones are finished during setup. */
  @State(Scope.Thread)
  public static class Keys {
    private String prefix;
    private long next;
    private final List<IdempotencyKey> finished = new ArrayList<>();
    private final List<String> finishedRaw = new ArrayList<>();
    private int replay;

    @Setup(Level.Trial)
    public void setUp(RedisBenchmark bench) {
      prefix = "bench-" + bench.run + "-" + bench.threads.incrementAndGet() + "-";
      RedisCommands<String, String> sync = bench.raw.sync();
      for (int i = 0; i < REPLAY_KEYS; i++) {
        IdempotencyKey key = IdempotencyKey.of("bench.charge", prefix + "done-" + i);
        bench.once.execute(key, FP, Codecs.utf8(), a -> RESPONSE);
        finished.add(key);
        String rawKey = "raw:" + prefix + "done-" + i;
        sync.set(rawKey, RESPONSE, SetArgs.Builder.px(RETENTION.toMillis()));
        finishedRaw.add(rawKey);
      }
    }

    String next() {
      return prefix + next++;
    }

    int nextReplay() {
      replay = (replay + 1) % REPLAY_KEYS;
      return replay;
    }
  }

  // --- new keys ---------------------------------------------------------------------------------

  private String rawNew(Keys keys) {
    RedisCommands<String, String> sync = raw.sync();
    String key = "raw:" + keys.next();
    if (sync.set(key, "started", SetArgs.Builder.nx().px(LEASE.toMillis())) == null) {
      throw new IllegalStateException("benchmark keys must be new");
    }
    sync.set(key, RESPONSE, SetArgs.Builder.px(RETENTION.toMillis()));
    return key;
  }

  private String onceNew(Keys keys) {
    return once.execute(IdempotencyKey.of("bench.charge", keys.next()), FP, Codecs.utf8(),
        attempt -> RESPONSE);
  }

  @Benchmark
  @Threads(1)
  @BenchmarkMode({Mode.Throughput, Mode.SampleTime})
  public String rawNew1(Keys keys) {
    return rawNew(keys);
  }

  @Benchmark
  @Threads(1)
  @BenchmarkMode({Mode.Throughput, Mode.SampleTime})
  public String onceNew1(Keys keys) {
    return onceNew(keys);
  }

  @Benchmark
  @Threads(64)
  public String rawNew64(Keys keys) {
    return rawNew(keys);
  }

  @Benchmark
  @Threads(64)
  public String onceNew64(Keys keys) {
    return onceNew(keys);
  }

  // --- replays ----------------------------------------------------------------------------------

  private String rawReplay(Keys keys) {
    String stored = raw.sync().setGet(keys.finishedRaw.get(keys.nextReplay()), "started",
        SetArgs.Builder.nx().px(LEASE.toMillis()));
    if (stored == null) {
      throw new IllegalStateException("replay keys must exist");
    }
    return stored;
  }

  private String onceReplay(Keys keys) {
    return once.execute(keys.finished.get(keys.nextReplay()), FP, Codecs.utf8(),
        attempt -> { throw new IllegalStateException("a replay must not run"); });
  }

  @Benchmark
  @Threads(1)
  @BenchmarkMode({Mode.Throughput, Mode.SampleTime})
  public String rawReplay1(Keys keys) {
    return rawReplay(keys);
  }

  @Benchmark
  @Threads(1)
  @BenchmarkMode({Mode.Throughput, Mode.SampleTime})
  public String onceReplay1(Keys keys) {
    return onceReplay(keys);
  }

  @Benchmark
  @Threads(64)
  public String rawReplay64(Keys keys) {
    return rawReplay(keys);
  }

  @Benchmark
  @Threads(64)
  public String onceReplay64(Keys keys) {
    return onceReplay(keys);
  }

  // --- batches ----------------------------------------------------------------------------------

  private List<ClaimRequest> batch(Keys keys) {
    Instant now = Instant.now();
    List<ClaimRequest> requests = new ArrayList<>(100);
    for (int i = 0; i < 100; i++) {
      requests.add(new ClaimRequest(IdempotencyKey.of("bench.batch", keys.next()), FP, now, LEASE,
          RETENTION));
    }
    return requests;
  }

  @Benchmark
  @Threads(1)
  @OperationsPerInvocation(100)
  public List<Claim> claimAll100(Keys keys) {
    return store.claimAll(batch(keys));
  }

  @Benchmark
  @Threads(1)
  @OperationsPerInvocation(100)
  public List<Claim> singleClaims100(Keys keys) {
    List<Claim> claims = new ArrayList<>(100);
    for (ClaimRequest request : batch(keys)) {
      claims.add(store.claim(request));
    }
    return claims;
  }

  static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }
}
