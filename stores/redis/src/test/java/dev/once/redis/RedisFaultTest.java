package dev.once.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.Codecs;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.LeaseLostException;
import dev.once.Once;
import dev.once.RequestInProgressException;
import dev.once.Result;
import dev.once.StoreUnavailableException;
import dev.once.redis.testing.RedisServerProcess;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.ClaimRules;
import dev.once.spi.Outcome;
import dev.once.testkit.ManualClock;
import io.lettuce.core.RedisClient;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** Redis crashing under the store: each test has a server of its own, which it kills. */
class RedisFaultTest {

  private static final Duration TIMEOUT = Duration.ofMillis(500);
  private static final Duration LEASE = Duration.ofSeconds(30);
  private static final Fingerprint FP = Fingerprint.of("payload");

  private final ManualClock clock = new ManualClock();

  @Test
  void aKilledServerFailsCallsWithinTheTimeoutAndTheStoreRecoversWhenItReturns() {
    try (RedisServerProcess server = RedisServerProcess.builder().appendOnlyFsyncAlways().start();
        RedisStore store = RedisStore.builder(server.uri()).commandTimeout(TIMEOUT).build()) {
      IdempotencyKey before = IdempotencyKey.of("fault", "before");
      long token = ((Claim.Acquired) store.claim(request(before))).token();

      server.kill();
      long start = System.nanoTime();
      assertThatThrownBy(() -> store.claim(request(IdempotencyKey.of("fault", "during"))))
          .isInstanceOf(StoreUnavailableException.class)
          .hasMessageContaining("Redis (" + server.uri() + ")")
          .hasMessageContaining("claim of fault/during");
      Duration waited = Duration.ofNanos(System.nanoTime() - start);
      assertThatThrownBy(() -> store.find(before)).isInstanceOf(StoreUnavailableException.class);

      server.restart();
      Claim after = awaitRecovery(() -> store.claim(request(IdempotencyKey.of("fault", "after"))));

      assertThat(waited).isLessThan(TIMEOUT.plusSeconds(2));
      assertThat(after).isInstanceOf(Claim.Acquired.class);
      assertThat(store.find(before)).get().satisfies(r -> assertThat(r.token()).isEqualTo(token));
      assertThat(store.claim(request(before))).isInstanceOf(Claim.InProgress.class);
    }
  }

  @Test
  void withAppendFsyncAlwaysARestartMidRunLosesNoCompletedKeyAndRunsNothingTwice()
      throws Exception {
    int keys = 300;
    try (RedisServerProcess server = RedisServerProcess.builder().appendOnlyFsyncAlways().start();
        RedisStore store = RedisStore.builder(server.uri()).commandTimeout(TIMEOUT).build()) {
      Once once = Once.builder(store).clock(clock).lease(LEASE).build();
      Map<Integer, AtomicInteger> runs = new ConcurrentHashMap<>();
      Set<Integer> acknowledged = ConcurrentHashMap.newKeySet();
      Set<Integer> stranded = ConcurrentHashMap.newKeySet();
      AtomicInteger storeErrors = new AtomicInteger();
      AtomicInteger next = new AtomicInteger();
      CountDownLatch halfway = new CountDownLatch(keys / 3);
      ExecutorService workers = Executors.newFixedThreadPool(4);
      List<Future<?>> done = new ArrayList<>();
      for (int w = 0; w < 4; w++) {
        done.add(workers.submit(() -> {
          for (int i = next.getAndIncrement(); i < keys; i = next.getAndIncrement()) {
            int k = i;
            while (true) {
              try {
                once.call(IdempotencyKey.of("aof", "k" + k), FP, Codecs.utf8(), a -> {
                  runs.computeIfAbsent(k, x -> new AtomicInteger()).incrementAndGet();
                  return "v" + k;
                });
                acknowledged.add(k);
                halfway.countDown();
                break;
              } catch (StoreUnavailableException e) {
                storeErrors.incrementAndGet();
              } catch (LeaseLostException e) {
                // Not from a completion re-sent after the restart: the copy of an applied
                // completion is acknowledged. Should one occur, the caller retries as for any
                // lease lost: the retry replays, and the checks below still hold.
                storeErrors.incrementAndGet();
              } catch (RequestInProgressException e) {
                // Claimed before the crash, completion lost with the connection: its lease
                // must pass before anyone may run it again.
                stranded.add(k);
                break;
              }
            }
          }
          return null;
        }));
      }
      assertThat(halfway.await(60, TimeUnit.SECONDS)).isTrue();
      server.kill();
      server.restart();
      for (Future<?> f : done) {
        f.get(120, TimeUnit.SECONDS);
      }
      workers.shutdown();

      // Every key acknowledged before or after the crash replays and never runs again.
      for (int k : acknowledged) {
        Result<String> replay = once.call(IdempotencyKey.of("aof", "k" + k), FP, Codecs.utf8(),
            a -> "ran again");
        assertThat(replay.replayed()).as("key %s replays", k).isTrue();
        assertThat(replay.value()).isEqualTo("v" + k);
        assertThat(runs.get(k)).as("runs of key %s", k).hasValue(1);
      }
      assertThat(acknowledged.size() + stranded.size()).isEqualTo(keys);
      assertThat(acknowledged.size()).isGreaterThan(keys / 3);
      // A stranded key is taken over once its lease passed: the one case that runs twice.
      clock.advance(LEASE);
      for (int k : stranded) {
        assertThat(once.call(IdempotencyKey.of("aof", "k" + k), FP, Codecs.utf8(), a -> "v" + k)
            .replayed()).isFalse();
      }
    }
  }

  @Test
  void withoutPersistenceARestartForgetsEverything() {
    try (RedisServerProcess server = RedisServerProcess.start();
        RedisStore store = RedisStore.builder(server.uri()).commandTimeout(TIMEOUT).build()) {
      IdempotencyKey key = IdempotencyKey.of("plain", "k");
      store.claim(request(key));

      server.kill();
      server.restart();

      assertThat(awaitRecovery(() -> store.find(key))).isEmpty();
    }
  }

  @Test
  void aStoreBuiltWhileRedisIsDownFailsItsCallsUntilRedisStartsThenWorks() {
    int port = RedisServerProcess.freePort(); // nothing listens there yet
    String uri = "redis://127.0.0.1:" + port;
    RedisClient client = RedisClient.create(uri);
    try (RedisStore fromUri = RedisStore.builder(uri).commandTimeout(TIMEOUT).build();
        RedisStore overClient = RedisStore.builder(client).commandTimeout(TIMEOUT).build()) {
      IdempotencyKey key = IdempotencyKey.of("start", "k");
      for (RedisStore store : List.of(fromUri, overClient)) {
        for (Runnable call : List.<Runnable>of(() -> store.claim(request(key)),
            () -> store.find(key),
            () -> store.complete(key, 1, Outcome.success("text/plain", new byte[0]),
                clock.instant(), Duration.ofHours(1)))) {
          assertThatThrownBy(call::run).isInstanceOf(StoreUnavailableException.class)
              .hasMessageContaining("cannot connect to")
              .satisfies(e -> assertThat(((StoreUnavailableException) e).mayHaveBeenApplied())
                  .as("nothing was sent").isFalse());
        }
      }

      try (RedisServerProcess server = RedisServerProcess.builder().port(port).start()) {
        // No retry loop: the first call after the server is up connects and works.
        Claim.Acquired first = (Claim.Acquired) fromUri.claim(request(key));
        assertThat(overClient.claim(request(key))).isEqualTo(new Claim.InProgress(first.leaseUntil()));
        overClient.complete(key, first.token(), Outcome.success("text/plain", new byte[] {1}),
            clock.instant(), Duration.ofHours(1));
        assertThat(fromUri.claim(request(key))).isInstanceOf(Claim.Replay.class);
        // The version was checked once per store, on its first connection.
        assertThat((String) server.call("INFO", "commandstats"))
            .containsPattern("cmdstat_info:calls=2,");
      }
    } finally {
      client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
    }
  }

  /**
   * Lettuce re-sends a command whose answer a dropped connection lost (at-least-once): the copy
   * must find the first one's write as its own. The fault is made deterministic on a real server:
   * while it sleeps ({@code DEBUG SLEEP}), the store's command and then a {@code CLIENT KILL} of
   * the store's connection (on a connection opened before the sleep) reach its socket buffers; on
   * waking, Redis runs both in one event-loop pass, in that order, so the command takes effect and
   * its answer, not yet written, is dropped with the connection. Lettuce reconnects and sends the
   * same bytes again. {@code INFO commandstats} proves that the command ran twice.
   */
  @Test
  void aClaimAndACompletionResentAfterAReconnectAreAnsweredAsTheClaimantsOwn() throws Exception {
    try (RedisServerProcess server = RedisServerProcess.builder()
        .arg("--enable-debug-command", "yes").start();
        RedisStore store = RedisStore.builder(server.uri())
            .commandTimeout(Duration.ofSeconds(10)).build()) {
      IdempotencyKey key = IdempotencyKey.of("resent", "k");
      assertThat(store.find(key)).isEmpty(); // connected
      ClaimRequest claim = request(key);

      Claim answer = answeredAfterALostReply(server, () -> store.claim(claim));

      assertThat(commandCalls(server, "set")).as("SET NX GET sent twice").isEqualTo(2);
      Claim.Acquired acquired = new Claim.Acquired(ClaimRules.firstToken(clock.instant()), false,
          1, null, clock.instant().plus(LEASE));
      assertThat(answer).isEqualTo(acquired);
      assertThat(store.find(key)).get().satisfies(r -> {
        assertThat(r.claimId()).isEqualTo(claim.claimId());
        assertThat(r.token()).isEqualTo(acquired.token());
      });

      Outcome outcome = Outcome.success("text/plain", "charged".getBytes(StandardCharsets.UTF_8));
      answeredAfterALostReply(server, () -> {
        store.complete(key, acquired.token(), outcome, clock.instant(), Duration.ofHours(1));
        return "acknowledged";
      });

      assertThat(commandCalls(server, "evalsha")).as("the COMPLETE script run twice").isEqualTo(2);
      assertThat(commandCalls(server, "set")).as("written once").isEqualTo(1);
      assertThat(store.claim(request(key))).isEqualTo(new Claim.Replay(outcome, acquired.token()));
    }
  }

  /**
   * Runs {@code call} so that the server executes its command, drops the answer with the
   * connection, and gets the command again from Lettuce after it reconnects; returns what the call
   * answered. Resets the server's command statistics first.
   */
  private static <T> T answeredAfterALostReply(RedisServerProcess server, Callable<T> call)
      throws Exception {
    String storeConnection = storeClientId(server);
    ExecutorService threads = Executors.newFixedThreadPool(2);
    try (Socket admin = new Socket(server.host(), server.port())) {
      admin.setSoTimeout(10_000);
      send(admin, "CONFIG", "RESETSTAT");
      Future<Object> sleep = threads.submit(() -> server.call("DEBUG", "SLEEP", "1"));
      Thread.sleep(250); // the server sleeps
      Future<T> answer = threads.submit(call);
      Thread.sleep(250); // the store's command waits in the server's socket buffer
      assertThat(send(admin, "CLIENT", "KILL", "ID", storeConnection)).isEqualTo(":1");
      T result = answer.get(20, TimeUnit.SECONDS);
      sleep.get(20, TimeUnit.SECONDS);
      return result;
    } finally {
      threads.shutdownNow();
    }
  }

  /** The id of the one client connection that is not this test's (the store's). */
  private static String storeClientId(RedisServerProcess server) {
    for (String line : ((String) server.call("CLIENT", "LIST")).split("\n")) {
      if (!line.contains(" cmd=client")) {
        return line.substring("id=".length(), line.indexOf(' '));
      }
    }
    throw new IllegalStateException("the store has no connection");
  }

  /** Sends one command on {@code socket} and reads a one-line answer. */
  private static String send(Socket socket, String... command) throws IOException {
    StringBuilder resp = new StringBuilder("*" + command.length + "\r\n");
    for (String arg : command) {
      resp.append('$').append(arg.length()).append("\r\n").append(arg).append("\r\n");
    }
    socket.getOutputStream().write(resp.toString().getBytes(StandardCharsets.US_ASCII));
    socket.getOutputStream().flush();
    StringBuilder line = new StringBuilder();
    InputStream in = socket.getInputStream();
    for (int c = in.read(); c != '\r'; c = in.read()) {
      if (c < 0) {
        throw new IOException("closed");
      }
      line.append((char) c);
    }
    in.read(); // \n
    return line.toString();
  }

  private static long commandCalls(RedisServerProcess server, String command) {
    Matcher m = Pattern.compile("cmdstat_" + command + ":calls=(\\d+),")
        .matcher((String) server.call("INFO", "commandstats"));
    return m.find() ? Long.parseLong(m.group(1)) : 0;
  }

  private ClaimRequest request(IdempotencyKey key) {
    return new ClaimRequest(key, FP, clock.instant(), LEASE, Duration.ofHours(1));
  }

  /** Retries {@code call} while the store is unavailable, for at most 20 s. */
  private static <T> T awaitRecovery(java.util.function.Supplier<T> call) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
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
}
