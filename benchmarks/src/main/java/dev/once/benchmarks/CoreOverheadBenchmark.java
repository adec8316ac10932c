package dev.once.benchmarks;

import dev.once.Codecs;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.InMemoryStore;
import dev.once.Once;
import dev.once.Result;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.ThreadParams;

/**
 * The core overhead of {@link Once} over the {@link InMemoryStore}, each path next to the raw
 * {@link ConcurrentHashMap} primitive the store is built on, in the same JMH run.
 *
 * <ul>
 *   <li>{@code newKey} vs {@code baselineNewKey}: a key never seen before. Once claims, runs a
 *       constant-returning lambda, encodes and completes; the baseline does
 *       {@code putIfAbsent(key, IN_PROGRESS)} + {@code put(key, outcome)}, the moral equivalent of
 *       {@code INSERT … ON CONFLICT DO NOTHING} + {@code UPDATE}.
 *   <li>{@code replay} vs {@code baselineReplay}: a key completed in setup (a pool of
 *       {@value #REPLAY_POOL} keys, picked pseudo-randomly per thread, shared by all threads).
 *       Once claims, finds COMPLETED and decodes the stored outcome; the baseline is a {@code get}.
 *   <li>{@code fingerprintOnly}: {@code Fingerprint.of} of the same ~100-byte payload. Both Once
 *       benchmarks include it, because a caller pays it on every request; subtract it to see Once
 *       alone.
 * </ul>
 *
 * <p>Both sides build the key string the same way ({@code prefix + counter} or a pooled string);
 * only the Once side turns it into a validated {@link IdempotencyKey}, which is part of Once's
 * cost.
 *
 * <p>Memory: fresh keys make a store grow without bound (millions of records per second of
 * baseline). Each thread therefore owns its new-key store and map and replaces both by empty ones
 * every {@code window} fresh keys (default 65,536), identically on both sides: the growth and
 * resizing of a map of up to {@code window} entries is measured, unbounded heap growth is not.
 * Run with {@code -p window=1048576} for a larger, more cache-missing working set.
 *
 * <p>Run it with {@code -t 1} and {@code -t 2}; see {@code benchmarks/README.md}.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Fork(1)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@State(Scope.Benchmark)
public class CoreOverheadBenchmark {

  /** How many pre-completed keys the replay benchmarks pick from. A power of two. */
  static final int REPLAY_POOL = 1024;

  static final String SCOPE = "bench.core";

  /** What the logic returns, every time. */
  static final String RESULT = "ok:charged";

  /** Marker the baseline stores while "in progress". */
  static final Object IN_PROGRESS = new Object();

  /**
   * A ~100-byte request body, as a caller would fingerprint it. 100 bytes exactly, checked below.
   */
  static final byte[] PAYLOAD = ("{\"amount\":1999,\"currency\":\"EUR\","
      + "\"customer\":\"cus_8f3k2L9q\",\"description\":\"order #1844670, gift wrap\"}")
      .getBytes(StandardCharsets.UTF_8);

  static {
    if (PAYLOAD.length != 100) {
      throw new IllegalStateException("payload is " + PAYLOAD.length + " bytes, expected 100");
    }
  }

  // ---------------------------------------------------------------- replay state (shared)

  /** Shared by all threads, as one {@code Once} per store is in production. */
  private InMemoryStore replayStore;
  private Once replayOnce;
  private ConcurrentHashMap<String, Object> replayMap;
  private String[] replayKeys;

  @Setup(Level.Trial)
  public void setUpReplay() {
    replayStore = new InMemoryStore();
    replayOnce = Once.builder(replayStore).build();
    replayMap = new ConcurrentHashMap<>();
    replayKeys = new String[REPLAY_POOL];
    Fingerprint fingerprint = Fingerprint.of(PAYLOAD);
    byte[] outcome = RESULT.getBytes(StandardCharsets.UTF_8);
    for (int i = 0; i < REPLAY_POOL; i++) {
      String key = "replay-" + i;
      replayKeys[i] = key;
      Result<String> first = replayOnce.call(IdempotencyKey.of(SCOPE, key), fingerprint,
          Codecs.utf8(), attempt -> RESULT);
      if (first.replayed()) {
        throw new IllegalStateException("setup key " + key + " was already there");
      }
      replayMap.put(key, outcome);
    }
    // Prove the benchmarked path is the replay path before measuring it.
    Result<String> again = replayOnce.call(IdempotencyKey.of(SCOPE, replayKeys[0]), fingerprint,
        Codecs.utf8(), attempt -> {
          throw new IllegalStateException("replay ran the logic");
        });
    if (!again.replayed() || !RESULT.equals(again.value())) {
      throw new IllegalStateException("not a replay: " + again);
    }
  }

  // ---------------------------------------------------------------- per-thread state

  /** Per thread: its key prefix and counter, its replay key generator, its own new-key stores. */
  @State(Scope.Thread)
  public static class PerThread {

    /** Fresh keys per store (and per baseline map) before both are replaced by empty ones. */
    @Param("65536")
    public int window;

    String prefix;
    long counter;
    long sinceReset;
    long random;

    InMemoryStore store;
    Once once;
    ConcurrentHashMap<String, Object> map;

    @Setup(Level.Iteration)
    public void setUp(ThreadParams threads) {
      if (window <= 0) {
        throw new IllegalArgumentException("window must be positive");
      }
      // The prefix keeps threads' keys apart; the counter carries on across iterations.
      prefix = "t" + threads.getThreadIndex() + "-";
      // Each thread picks replay keys pseudo-randomly, with its own seed. Sequential cursors gave
      // bimodal -t 2 replay results (about 4 or 7.7 ops/us, switching within a fork), most
      // likely from how the two threads' positions met on the shared store's per-bin locks.
      random = 0x9E3779B97F4A7C15L * (threads.getThreadIndex() + 1);
      reset();
    }

    void reset() {
      store = new InMemoryStore();
      once = Once.builder(store).build();
      map = new ConcurrentHashMap<>();
      sinceReset = 0;
    }

    /** The next fresh key string; replaces the stores every {@code window} keys. */
    String nextKey() {
      if (++sinceReset > window) {
        reset();
        sinceReset = 1;
      }
      return prefix + counter++;
    }

    /** A pseudo-random pool index (xorshift64: a few ns, the same on both sides). */
    int nextReplay() {
      long x = random;
      x ^= x << 13;
      x ^= x >>> 7;
      x ^= x << 17;
      random = x;
      return (int) (x >>> 40) & (REPLAY_POOL - 1);
    }
  }

  // ---------------------------------------------------------------- fresh keys

  /**
   * Once on a fresh key: fingerprint the payload, validate the key, claim, run, encode, complete.
   */
  @Benchmark
  public Result<String> newKey(PerThread t) {
    String key = t.nextKey();
    return t.once.call(IdempotencyKey.of(SCOPE, key), Fingerprint.of(PAYLOAD), Codecs.utf8(),
        attempt -> RESULT);
  }

  /** The raw primitive: claim a fresh key with putIfAbsent, then store the "outcome". */
  @Benchmark
  public Object baselineNewKey(PerThread t) {
    String key = t.nextKey();
    ConcurrentHashMap<String, Object> map = t.map;
    Object previous = map.putIfAbsent(key, IN_PROGRESS);
    if (previous != null) {
      return previous; // never happens: keys are fresh
    }
    map.put(key, RESULT);
    return RESULT;
  }

  // ---------------------------------------------------------------- replays

  /** Once on a completed key: fingerprint the payload, validate the key, claim → Replay, decode. */
  @Benchmark
  public Result<String> replay(PerThread t) {
    String key = replayKeys[t.nextReplay()];
    return replayOnce.call(IdempotencyKey.of(SCOPE, key), Fingerprint.of(PAYLOAD), Codecs.utf8(),
        attempt -> RESULT);
  }

  /** The raw primitive: read a present key. */
  @Benchmark
  public Object baselineReplay(PerThread t) {
    return replayMap.get(replayKeys[t.nextReplay()]);
  }

  // ---------------------------------------------------------------- the caller's share

  /** SHA-256 of the ~100-byte payload: the caller's part of newKey and replay. */
  @Benchmark
  public Fingerprint fingerprintOnly() {
    return Fingerprint.of(PAYLOAD);
  }
}
