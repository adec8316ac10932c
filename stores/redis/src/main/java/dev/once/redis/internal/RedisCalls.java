package dev.once.redis.internal;

import dev.once.StoreUnavailableException;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisCommandTimeoutException;
import io.lettuce.core.RedisConnectionException;
import io.lettuce.core.RedisNoScriptException;
import io.lettuce.core.ScriptOutputType;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

/**
 * How every part of the store talks to Redis: sending a command or a script, waiting for its reply
 * within the command timeout, waiting for replicas after a write, and turning whatever goes wrong
 * (a timeout, a lost connection, a Lettuce error) into a {@link StoreUnavailableException} that
 * says whether the call may have been applied. One place, so that every operation maps failures
 * alike.
 */
final class RedisCalls implements AutoCloseable {

  private static final byte[] EMPTY = new byte[0];

  private final RedisConnector connector;
  /** How many replicas must acknowledge each write ({@code Durability.replicas()}); 0: none. */
  private final int replicas;
  /** How long to wait for them ({@code Durability.timeout()}). */
  private final Duration replicaTimeout;
  private final Duration timeout;

  RedisCalls(RedisConnector connector, int replicas, Duration replicaTimeout, Duration timeout) {
    this.connector = connector;
    this.replicas = replicas;
    this.replicaTimeout = replicaTimeout;
    this.timeout = timeout;
  }

  /** The open connection, opened first when there is none (see {@link RedisConnector#access}). */
  RedisAccess access(Object what) {
    return connector.access(what);
  }

  /** The open connection, or null while there is none ({@link RedisConnector#opened}). */
  RedisAccess opened() {
    return connector.opened();
  }

  /** A command's reply; a command that cannot even be queued fails the reply, never the caller. */
  static <T> CompletableFuture<T> send(Supplier<? extends CompletionStage<T>> command) {
    try {
      return command.get().toCompletableFuture();
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /** EVALSHA, falling back to EVAL (which caches the script) when the server answers NOSCRIPT. */
  static <T> CompletableFuture<T> run(RedisAccess redis, Script script, ScriptOutputType type,
      byte[][] keys, byte[]... args) {
    try {
      CompletableFuture<T> sha = redis.commands().<T>evalsha(script.sha(), type, keys, args)
          .toCompletableFuture();
      return sha.exceptionallyCompose(e -> unwrap(e) instanceof RedisNoScriptException
          ? redis.commands().<T>eval(script.source(), type, keys, args).toCompletableFuture()
          : CompletableFuture.failedFuture(unwrap(e)));
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /**
   * {@link Script#SWAP}: {@code next} (null: delete) if the record is still {@code current}. The
   * compare-and-set that claims and sweeps share; {@code ttlMillis} 0 keeps the key's expiry.
   */
  static CompletableFuture<List<Object>> swap(RedisAccess redis, byte[] key, byte[] current,
      byte[] next, long ttlMillis) {
    return run(redis, Script.SWAP, ScriptOutputType.MULTI, new byte[][] {key},
        current == null ? EMPTY : current, next == null ? EMPTY : next,
        ttlMillis > 0 ? number(ttlMillis) : EMPTY);
  }

  /**
   * {@code WAIT} after writes that took effect: whatever goes wrong here, they may survive
   * ({@link StoreUnavailableException#mayHaveBeenApplied()} true).
   */
  void awaitReplicas(List<byte[]> keys, Object what) {
    if (this.replicas > 0) {
      awaitReplicas(connector.access(what), keys, what);
    }
  }

  void awaitReplicas(RedisAccess redis, List<byte[]> keys, Object what) {
    int replicas = this.replicas;
    if (replicas == 0) {
      return;
    }
    long deadline = System.nanoTime() + timeout.toNanos() + replicaTimeout.toNanos();
    long acknowledged;
    try {
      acknowledged = await(send(() -> redis.waitForReplicas(keys, replicas, replicaTimeout)),
          deadline, "WAIT after " + what);
    } catch (StoreUnavailableException e) {
      throw mayHaveBeenApplied(e);
    }
    if (acknowledged < replicas) {
      throw tooFewReplicas(acknowledged, replicas, what);
    }
  }

  /** {@link #awaitReplicas(RedisAccess, List, Object)} without blocking, as {@link #within}. */
  CompletableFuture<Void> awaitReplicasAsync(RedisAccess redis, List<byte[]> keys, Object what) {
    int replicas = this.replicas;
    if (replicas == 0) {
      return CompletableFuture.completedFuture(null);
    }
    return within(send(() -> redis.waitForReplicas(keys, replicas, replicaTimeout)),
        timeout.toNanos() + replicaTimeout.toNanos(), "WAIT after " + what)
        .handle((acknowledged, failure) -> {
          if (failure != null) {
            throw mayHaveBeenApplied((StoreUnavailableException) unwrap(failure));
          }
          if (acknowledged < replicas) {
            throw tooFewReplicas(acknowledged, replicas, what);
          }
          return null;
        });
  }

  private StoreUnavailableException tooFewReplicas(long acknowledged, int replicas, Object what) {
    return new StoreUnavailableException("only " + acknowledged + " of " + replicas
        + " replicas acknowledged the " + what + " within " + replicaTimeout.toMillis()
        + " ms (" + description() + "); the write is on the primary and may survive,"
        + " retry as for any store error", null, true);
  }

  /** {@code e}, saying that the call may have been applied. */
  static StoreUnavailableException mayHaveBeenApplied(StoreUnavailableException e) {
    if (e.mayHaveBeenApplied()) {
      return e;
    }
    StoreUnavailableException applied = new StoreUnavailableException(e.getMessage(), e.getCause(),
        true);
    applied.setStackTrace(e.getStackTrace());
    for (Throwable suppressed : e.getSuppressed()) {
      applied.addSuppressed(suppressed);
    }
    return applied;
  }

  /** When replies sent now are due: one command timeout from now. */
  long deadline() {
    return System.nanoTime() + timeout.toNanos();
  }

  /**
   * The reply, within the deadline. A Redis error reply (WRONGTYPE, OOM, READONLY, CLUSTERDOWN,
   * LOADING, BUSY …) means the command was refused before it changed anything: every command and
   * script of the store writes at most once, last; so such failures say
   * {@code mayHaveBeenApplied() == false}. A timeout or a lost connection may have lost the answer
   * of a command that took effect: true.
   */
  <T> T await(CompletionStage<T> stage, long deadline, Object what) {
    CompletableFuture<T> future = stage.toCompletableFuture();
    try {
      return future.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      future.cancel(true);
      throw timedOut(what, e);
    } catch (ExecutionException | CompletionException e) {
      throw unavailable(what, unwrap(e));
    } catch (CancellationException e) {
      throw unavailable(what, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new StoreUnavailableException("interrupted while waiting for Redis ("
          + description() + ") to answer the " + what, e);
    }
  }

  /**
   * {@link #await} without blocking: the reply, or within the command timeout the failure that
   * {@code await} would throw (a command left unanswered is cancelled, as there). Completes on
   * Lettuce's thread (or the timer's): what follows must be quick and must not block.
   */
  <T> CompletableFuture<T> within(CompletableFuture<T> reply, Object what) {
    return within(reply, timeout.toNanos(), what);
  }

  private <T> CompletableFuture<T> within(CompletableFuture<T> reply, long nanos, Object what) {
    return reply.copy().orTimeout(nanos, TimeUnit.NANOSECONDS)
        .exceptionallyCompose(e -> {
          Throwable cause = unwrap(e);
          if (cause instanceof TimeoutException) {
            reply.cancel(true);
            return CompletableFuture.failedFuture(timedOut(what, cause));
          }
          return CompletableFuture.failedFuture(unavailable(what, cause));
        });
  }

  private StoreUnavailableException timedOut(Object what, Throwable cause) {
    return new StoreUnavailableException("Redis (" + description() + ") did not answer the "
        + what + " within the command timeout of " + timeout.toMillis() + " ms", cause);
  }

  private StoreUnavailableException unavailable(Object what, Throwable cause) {
    if (cause instanceof RedisCommandTimeoutException) {
      return timedOut(what, cause);
    }
    if (cause instanceof RedisConnectionException) {
      return new StoreUnavailableException("cannot reach Redis (" + description()
          + ") for the " + what + ": " + cause.getMessage(), cause);
    }
    return new StoreUnavailableException("Redis (" + description() + ") failed the " + what
        + ": " + cause, cause, !(cause instanceof RedisCommandExecutionException));
  }

  /** The failure inside a {@link CompletionException} or {@link ExecutionException}. */
  static Throwable unwrap(Throwable e) {
    Throwable t = e;
    while ((t instanceof CompletionException || t instanceof ExecutionException)
        && t.getCause() != null) {
      t = t.getCause();
    }
    return t;
  }

  // Arguments and replies: scripts take and give numbers as ASCII digits, text as UTF-8.

  static byte[] number(long value) {
    if (value < 0) {
      return Long.toString(value).getBytes(StandardCharsets.US_ASCII); // never on the hot path
    }
    int length = 1;
    for (long rest = value / 10; rest > 0; rest /= 10) {
      length++;
    }
    byte[] out = new byte[length];
    long rest = value;
    for (int i = length - 1; i >= 0; i--) {
      out[i] = (byte) ('0' + rest % 10);
      rest /= 10;
    }
    return out;
  }

  static long number(Object reply) {
    if (reply instanceof Long l) {
      return l;
    }
    return Long.parseLong(text(reply));
  }

  private static String text(Object reply) {
    return new String(bytes(reply), StandardCharsets.UTF_8);
  }

  static byte[] bytes(Object reply) {
    if (reply == null) {
      return new byte[0];
    }
    return (byte[]) reply;
  }

  static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /** Where the store connects to, for messages. */
  String description() {
    return connector.description();
  }

  /** Closes the connection, and the client when the store owns it. */
  @Override
  public void close() {
    connector.close();
  }
}
