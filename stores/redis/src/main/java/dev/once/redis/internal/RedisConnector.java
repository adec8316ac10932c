package dev.once.redis.internal;

import dev.once.StoreUnavailableException;
import io.lettuce.core.RedisException;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

/**
 * Opens the store's one connection when the first call needs it, not when the store is built, so
 * that an application starts while Redis is down: each call until a connection is open starts (or
 * joins) a connection attempt and waits for it at most the command timeout, then throws
 * {@link StoreUnavailableException} with {@code mayHaveBeenApplied() == false} (nothing was sent).
 * Once open, the connection is kept; Lettuce reconnects it by itself after an outage.
 *
 * <p>The first connection that opens is checked once: a server older than Redis 7.0 (whose
 * {@code SET} does not take {@code NX} and {@code GET} together) is refused with
 * {@link IllegalStateException}, the connection closed, and the next call tries again. A server
 * that does not answer {@code INFO} (some managed services rename it) is let through.
 */
public final class RedisConnector implements AutoCloseable {

  private final Supplier<CompletableFuture<RedisAccess>> open;
  private final String description;
  private final Duration timeout;
  private final Runnable onClose;

  private volatile RedisAccess access;
  /** The attempt in progress, or the last one; guarded by {@code this}. */
  private CompletableFuture<RedisAccess> attempt;
  /** Counts {@link #reopen()}s; a connection opened under an older count is not kept. */
  private long generation;
  private boolean closed;

  /**
   * @param open        starts opening a connection (must not block)
   * @param description where it connects to, for messages (no password)
   * @param timeout     how long a call waits for the connection
   * @param onClose     runs when the store is closed (shuts down a client the store owns), or null
   */
  public RedisConnector(Supplier<CompletableFuture<RedisAccess>> open, String description,
      Duration timeout, Runnable onClose) {
    this.open = Objects.requireNonNull(open, "open");
    this.description = Objects.requireNonNull(description, "description");
    this.timeout = Objects.requireNonNull(timeout, "timeout");
    this.onClose = onClose;
  }

  /** Where the store connects to, for messages. */
  public String description() {
    return description;
  }

  /**
   * The open connection; opens it first when there is none.
   *
   * @param what the operation that needs it, for messages
   * @throws StoreUnavailableException if no connection opened within the command timeout (nothing
   *     was sent: {@code mayHaveBeenApplied()} is false)
   * @throws IllegalStateException     if the server is older than Redis 7.0
   */
  public RedisAccess access(Object what) {
    RedisAccess open = access;
    return open != null ? open : connect(what);
  }

  /**
   * The open connection, or null while there is none (not yet opened, reopening, closed): for a
   * caller that must not block, which then goes the blocking way ({@link #access}) on a thread that
   * may.
   */
  public RedisAccess opened() {
    return access;
  }

  private RedisAccess connect(Object what) {
    CompletableFuture<RedisAccess> pending;
    long opened;
    synchronized (this) {
      if (closed) {
        throw new StoreUnavailableException("the Redis store (" + description + ") is closed;"
            + " the " + what + " was not sent", null, false);
      }
      if (access != null) {
        return access;
      }
      if (attempt == null || attempt.isCompletedExceptionally() || attempt.isCancelled()) {
        attempt = start(generation);
      }
      pending = attempt;
      opened = generation;
    }
    try {
      RedisAccess access = pending.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
      synchronized (this) {
        if (generation != opened) {
          // The Sentinels switched while it opened: it may be on the old primary (start() closes
          // it). Nothing was sent; the caller retries, and the next call opens a new one.
          throw new StoreUnavailableException("the Redis primary changed while connecting to "
              + description + " for the " + what + "; nothing was sent", null, false);
        }
      }
      return access;
    } catch (TimeoutException e) {
      throw new StoreUnavailableException("cannot connect to " + description + " for the " + what
          + " within the command timeout of " + timeout.toMillis() + " ms; nothing was sent", e,
          false);
    } catch (ExecutionException | CompletionException e) {
      Throwable cause = e.getCause() == null ? e : e.getCause();
      while (cause instanceof CompletionException && cause.getCause() != null) {
        cause = cause.getCause();
      }
      if (cause instanceof TooOld tooOld) {
        throw new IllegalStateException(tooOld.getMessage());
      }
      if (cause instanceof RedisException || cause instanceof java.io.IOException) {
        throw new StoreUnavailableException("cannot connect to " + description + " for the "
            + what + ": " + cause.getMessage() + "; nothing was sent", cause, false);
      }
      throw new StoreUnavailableException("cannot connect to " + description + " for the " + what
          + ": " + cause + "; nothing was sent", cause, false);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new StoreUnavailableException("interrupted while connecting to " + description
          + " for the " + what + "; nothing was sent", e, false);
    }
  }

  /** A connection attempt: open, check the server's version, keep the connection. */
  private CompletableFuture<RedisAccess> start(long opened) {
    CompletableFuture<RedisAccess> opening;
    try {
      opening = open.get();
    } catch (RuntimeException e) {
      opening = CompletableFuture.failedFuture(e);
    }
    CompletableFuture<RedisAccess> checked = opening.thenCompose(this::checked);
    checked.thenAccept(connection -> {
      boolean keep;
      synchronized (this) {
        keep = !closed && generation == opened;
        if (keep) {
          access = connection;
        }
      }
      if (!keep) {
        connection.close();
      }
    });
    return checked;
  }

  /**
   * {@code opened} if its server is Redis 7.0 or newer (or does not say); else closed, and the
   * attempt fails with {@link TooOld}.
   */
  private CompletableFuture<RedisAccess> checked(RedisAccess opened) {
    CompletableFuture<String> info;
    try {
      info = opened.commands().info("server").toCompletableFuture().thenApply(text -> text);
    } catch (RuntimeException e) {
      info = CompletableFuture.failedFuture(e);
    }
    return info.completeOnTimeout(null, timeout.toNanos(), TimeUnit.NANOSECONDS)
        .exceptionally(unanswered -> null)
        .thenApply(text -> {
          String problem = text == null ? null : versionProblem(text);
          if (problem != null) {
            opened.close();
            throw new TooOld(description + " " + problem);
          }
          return opened;
        });
  }

  /** Why the server of this {@code INFO server} text is too old, or null when it is not. */
  public static String versionProblem(String info) {
    for (String line : info.split("\\r?\\n")) {
      if (line.startsWith("redis_version:")) {
        String version = line.substring("redis_version:".length()).trim();
        try {
          int major = Integer.parseInt(version.substring(0, version.indexOf('.')));
          return major >= 7 ? null : "runs Redis " + version + "; once-redis needs Redis 7.0 or"
              + " newer (a claim is SET ... NX GET, which older servers refuse)";
        } catch (RuntimeException unreadable) {
          return null;
        }
      }
    }
    return null;
  }

  /** A server older than Redis 7.0, inside the attempt's future. */
  private static final class TooOld extends RuntimeException {
    private static final long serialVersionUID = 1L;

    TooOld(String message) {
      super(message, null, false, false);
    }
  }

  /**
   * Drops the open connection, so that the next call opens a new one (through the Sentinels: to
   * the primary they name now). Calls in flight on it fail as on a lost connection.
   */
  public void reopen() {
    RedisAccess open;
    synchronized (this) {
      generation++; // a connection being opened now is not kept either
      open = access;
      access = null;
      attempt = null;
    }
    if (open != null) {
      open.close();
    }
  }

  /** Closes the connection (one still opening is closed when it opens), then runs onClose. */
  @Override
  public void close() {
    RedisAccess open;
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
      open = access;
      access = null;
    }
    try {
      if (open != null) {
        open.close();
      }
    } finally {
      if (onClose != null) {
        onClose.run();
      }
    }
  }
}
