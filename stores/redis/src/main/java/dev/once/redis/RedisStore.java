package dev.once.redis;

import dev.once.Checkpoint;
import dev.once.IdempotencyKey;
import dev.once.StoreUnavailableException;
import dev.once.support.Checks;
import dev.once.redis.internal.KeyLayout;
import dev.once.redis.internal.RecordFormat;
import dev.once.redis.internal.RedisAccess;
import dev.once.redis.internal.RedisConnector;
import dev.once.redis.internal.RedisEngine;
import dev.once.redis.internal.SentinelSwitches;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.Completion;
import dev.once.spi.HeldClaim;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.IdempotencyStore;
import dev.once.spi.Outcome;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.SocketOptions;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.ClusterTopologyRefreshOptions;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.RedisClusterURIUtil;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.Delay;
import java.net.URI;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;

/**
 * An {@link IdempotencyStore} on Redis, standalone or Cluster, through Lettuce. A record is one
 * string, so a claim is the native {@code SET key new-record NX GET PX}: it creates a new key, or
 * answers a replay, a duplicate in progress or a mismatch, in one round trip and no script. A claim
 * that must change a record (a takeover of a passed lease, a retry after a failure, a claim of an
 * expired record) is decided by {@link dev.once.spi.ClaimRules#decide} and written by a
 * compare-and-set script: one more round trip. Complete, fail, extend and checkpoint are one Lua
 * script each, conditional on the fencing token. Every decision uses the caller's clock, never
 * Redis's. {@link #claimAll} and {@link #completeAll} are pipelined.
 *
 * <pre>{@code
 * RedisStore store = RedisStore.builder("redis://127.0.0.1:6379")   // or redis-cluster://h1:p1,h2:p2
 *     .keyPrefix("once:")                                            // the default
 *     .commandTimeout(Duration.ofSeconds(2))                         // the default
 *     .durability(Durability.replicas(1, Duration.ofMillis(100)))    // default: plain
 *     .build();
 * Once once = Once.builder(store).build();
 * }</pre>
 *
 * <p>Retention is enforced by the caller's clock (a record whose expiry passed behaves as absent)
 * and, to collect garbage, by Redis's own key expiry, set one minute past the logical expiry. So
 * the store needs no {@code Maintenance}: {@link #purgeExpired} and {@link #reapExpiredLeases} walk
 * the keyspace with {@code SCAN} (in a cluster, every master) and change each record by
 * compare-and-set; they cost a pass over every key, for a caller's clock that runs ahead of
 * Redis's, for tests and for dashboards. Every Redis error, lost connection or
 * command timeout becomes a {@link StoreUnavailableException}; no call waits longer than the
 * command timeout (plus the {@code WAIT} timeout of {@link Durability#replicas}). Thread-safe: one
 * multiplexed connection serves every thread.
 *
 * <p>{@link Builder#build()} sends nothing: the store connects on its first call, so an application
 * starts while Redis is down, and its calls throw {@link StoreUnavailableException} (nothing sent:
 * {@link StoreUnavailableException#mayHaveBeenApplied()} false) until Redis is up. A command that
 * Lettuce re-sends after a reconnect is recognised: every record carries the claim id of the claim
 * that made it IN_PROGRESS, so a re-sent claim is answered Acquired with its own token, and a
 * completion or failure re-sent after it was applied is acknowledged.
 */
public final class RedisStore implements IdempotencyStore {

  /** The key prefix used unless {@link Builder#keyPrefix} says otherwise. */
  public static final String DEFAULT_KEY_PREFIX = "once:";
  /** The command timeout used unless {@link Builder#commandTimeout} says otherwise. */
  public static final Duration DEFAULT_COMMAND_TIMEOUT = Duration.ofSeconds(2);
  /** The payload bound used unless {@link Builder#maxPayloadBytes} says otherwise: 1 MiB. */
  public static final int DEFAULT_MAX_PAYLOAD_BYTES = 1 << 20;

  /** Runs a blocking connect (a cluster's, a caller's client's), one daemon thread an attempt. */
  private static final Executor CONNECTING = task -> {
    Thread thread = new Thread(task, "once-redis-connect");
    thread.setDaemon(true);
    thread.start();
  };

  private final RedisEngine engine;
  private final String keyPrefix;
  private final Durability durability;
  private final int maxPayloadBytes;

  private RedisStore(RedisEngine engine, String keyPrefix, Durability durability,
      int maxPayloadBytes) {
    this.engine = engine;
    this.keyPrefix = keyPrefix;
    this.durability = durability;
    this.maxPayloadBytes = maxPayloadBytes;
  }

  /**
   * A store over a standalone (or Sentinel) {@code client}, which must have been created with its
   * {@link RedisURI}. The store opens one connection, on its first call, and closes it on
   * {@link #close()}; the client stays the caller's.
   */
  public static Builder builder(RedisClient client) {
    return new Builder(Objects.requireNonNull(client, "client"), null, null);
  }

  /**
   * A store over a Redis Cluster {@code client}. The store opens one cluster connection, on its
   * first call, and closes it on {@link #close()}; the client stays the caller's. Enable adaptive
   * topology refresh on it so that the store follows slot migrations and failovers promptly
   * (redirects are followed anyway).
   */
  public static Builder builder(RedisClusterClient client) {
    return new Builder(null, Objects.requireNonNull(client, "client"), null);
  }

  /**
   * A store over a client of its own, created from {@code uri} and shut down on {@link #close()}:
   *
   * <ul>
   *   <li>{@code redis://[password@]host[:port][/database]}, {@code rediss://…} (TLS),
   *       {@code redis-sentinel://…}, {@code redis-socket://…}: Lettuce's URI syntax;
   *   <li>{@code redis-cluster://host:port[,host:port…]} and {@code rediss-cluster://…}: a Redis
   *       Cluster, reached through any of the seed nodes.
   * </ul>
   *
   * The client's commands time out after {@link Builder#commandTimeout}, it reconnects within a
   * second of the server coming back, and in a cluster it refreshes its topology on redirects.
   */
  public static Builder builder(String uri) {
    return new Builder(null, null, Objects.requireNonNull(uri, "uri"));
  }

  /** Configures a {@link RedisStore}. */
  public static final class Builder {
    private final RedisClient client;
    private final RedisClusterClient clusterClient;
    private final String uri;
    private String keyPrefix = DEFAULT_KEY_PREFIX;
    private Duration commandTimeout = DEFAULT_COMMAND_TIMEOUT;
    private Durability durability = Durability.plain();
    private int maxPayloadBytes = DEFAULT_MAX_PAYLOAD_BYTES;

    private Builder(RedisClient client, RedisClusterClient clusterClient, String uri) {
      this.client = client;
      this.clusterClient = clusterClient;
      this.uri = uri;
    }

    /**
     * What every key of the store starts with (default {@value RedisStore#DEFAULT_KEY_PREFIX}):
     * 1–64 visible ASCII characters without braces (a hash tag in the prefix would put every
     * record in one Redis Cluster slot). Stores with different prefixes share nothing.
     */
    public Builder keyPrefix(String prefix) {
      Objects.requireNonNull(prefix, "keyPrefix");
      if (prefix.isEmpty() || prefix.length() > 64) {
        throw new IllegalArgumentException(
            "keyPrefix must be 1–64 characters, was " + prefix.length());
      }
      for (int i = 0; i < prefix.length(); i++) {
        char c = prefix.charAt(i);
        if (c <= 0x20 || c >= 0x7F || c == '{' || c == '}') {
          throw new IllegalArgumentException("keyPrefix must be visible ASCII without braces:"
              + " character " + i + " is U+" + String.format("%04X", (int) c));
        }
      }
      this.keyPrefix = prefix;
      return this;
    }

    /**
     * The longest any store call waits for Redis (default 2 s); past it the call throws
     * {@link StoreUnavailableException}. A timed-out write may still have been applied: the
     * fencing token keeps that safe.
     */
    public Builder commandTimeout(Duration timeout) {
      Objects.requireNonNull(timeout, "commandTimeout");
      Checks.positive(timeout, "commandTimeout");
      this.commandTimeout = timeout;
      return this;
    }

    /** How sure each write must be; default {@link Durability#plain()}. */
    public Builder durability(Durability durability) {
      this.durability = Objects.requireNonNull(durability, "durability");
      return this;
    }

    /**
     * The largest outcome or checkpoint body the store accepts (default 1 MiB). {@code Once}
     * refuses larger payloads before they reach Redis; the store refuses them too.
     */
    public Builder maxPayloadBytes(int bytes) {
      this.maxPayloadBytes = Checks.positive(bytes, "maxPayloadBytes");
      return this;
    }

    /**
     * The store. Nothing is sent yet: the store connects on its first call (and checks then, once,
     * that the server is Redis 7.0 or newer), so it can be built while Redis is down; until a
     * connection opens, every call throws {@link StoreUnavailableException} (with
     * {@link StoreUnavailableException#mayHaveBeenApplied()} false), and the first call after
     * Redis is back works.
     *
     * @throws IllegalArgumentException if the URI is malformed
     */
    public RedisStore build() {
      RedisConnector connector = connector();
      RedisEngine engine = new RedisEngine(connector, new KeyLayout(keyPrefix),
          durability.replicas(), durability.timeout(),
          commandTimeout, maxPayloadBytes);
      return new RedisStore(engine, keyPrefix, durability, maxPayloadBytes);
    }

    private RedisConnector connector() {
      if (client != null) {
        // The client's own URI is not public, so no connectAsync: its blocking connect runs on a
        // thread of its own.
        return new RedisConnector(() -> CompletableFuture.supplyAsync(
            () -> RedisAccess.standalone(client, "Redis"), CONNECTING), "Redis", commandTimeout,
            null);
      }
      if (clusterClient != null) {
        return new RedisConnector(() -> CompletableFuture.supplyAsync(
            () -> RedisAccess.cluster(clusterClient, "Redis Cluster"), CONNECTING),
            "Redis Cluster", commandTimeout, null);
      }
      return connectorForUri();
    }

    private RedisConnector connectorForUri() {
      String scheme = uri.contains("://") ? uri.substring(0, uri.indexOf("://")) : "";
      boolean cluster = scheme.equals("redis-cluster") || scheme.equals("rediss-cluster");
      String where = redacted(uri);
      ClientResources resources = ClientResources.builder()
          // Reconnect within a second of the server coming back (Lettuce's default backs off to 30 s).
          .reconnectDelay(Delay.exponential(Duration.ofMillis(10), Duration.ofSeconds(1), 2,
              TimeUnit.MILLISECONDS))
          .build();
      SocketOptions socket = SocketOptions.builder().connectTimeout(commandTimeout).build();
      TimeoutOptions timeouts = TimeoutOptions.enabled(commandTimeout);
      try {
        if (cluster) {
          String plain = (scheme.startsWith("rediss") ? "rediss" : "redis")
              + uri.substring(scheme.length());
          List<RedisURI> seeds = RedisClusterURIUtil.toRedisURIs(URI.create(plain));
          seeds.forEach(s -> s.setTimeout(commandTimeout));
          RedisClusterClient owned = RedisClusterClient.create(resources, seeds);
          owned.setOptions(ClusterClientOptions.builder()
              .socketOptions(socket)
              .timeoutOptions(timeouts)
              .topologyRefreshOptions(ClusterTopologyRefreshOptions.builder()
                  .enableAllAdaptiveRefreshTriggers().build())
              .build());
          // The first connection reads the topology, blocking: on a thread of its own.
          return new RedisConnector(() -> CompletableFuture.supplyAsync(
              () -> RedisAccess.cluster(owned, where), CONNECTING), where, commandTimeout,
              () -> shutdown(owned, resources));
        }
        RedisURI redisUri = RedisURI.create(uri);
        redisUri.setTimeout(commandTimeout);
        RedisClient owned = RedisClient.create(resources, redisUri);
        owned.setOptions(ClientOptions.builder()
            .socketOptions(socket)
            .timeoutOptions(timeouts)
            .build());
        if (!SentinelSwitches.named(redisUri)) {
          return new RedisConnector(() -> RedisAccess.standaloneAsync(owned, redisUri, where),
              where, commandTimeout, () -> shutdown(owned, resources));
        }
        // Through Sentinels: leave a primary as soon as they switch away from it.
        RedisConnector[] connector = {null};
        SentinelSwitches switches = new SentinelSwitches(owned, redisUri,
            () -> connector[0].reopen());
        connector[0] = new RedisConnector(() -> {
          switches.listen();
          return RedisAccess.standaloneAsync(owned, redisUri, where);
        }, where, commandTimeout, () -> {
          switches.close();
          shutdown(owned, resources);
        });
        switches.listen(); // now, not at the first call: a switch before it counts too
        return connector[0];
      } catch (IllegalArgumentException e) {
        resources.shutdown(0, 2, TimeUnit.SECONDS);
        throw new IllegalArgumentException("not a Redis URI (redis://host:port, rediss://…,"
            + " redis-sentinel://…, redis-cluster://host:port,host:port): " + where
            + ": " + e.getMessage(), e);
      }
    }

    private static void shutdown(RedisClient client, ClientResources resources) {
      client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
      resources.shutdown(0, 2, TimeUnit.SECONDS);
    }

    private static void shutdown(RedisClusterClient client, ClientResources resources) {
      client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
      resources.shutdown(0, 2, TimeUnit.SECONDS);
    }

    /** The URI without its password, for messages. */
    private static String redacted(String uri) {
      return uri.replaceAll("://[^@/]*@", "://***@");
    }
  }

  /** The prefix of every key of this store. */
  public String keyPrefix() {
    return keyPrefix;
  }

  /** The durability grade of this store's writes. */
  public Durability durability() {
    return durability;
  }

  @Override
  public Claim claim(ClaimRequest request) {
    checkTimes(request);
    return engine.claim(request);
  }

  /**
   * {@link #claim} without blocking, natively: the same {@code SET … NX GET PX} (and, when the
   * record must change, the compare-and-set), each sent when the answer before it came, decided on
   * Lettuce's thread, within the command timeout; the replica wait too when the store has one.
   * {@code blocking} is used only while the store has no connection (before a first call opened
   * it, after a switch of primaries), to open one, and to read back and release a claim whose
   * write went unanswered.
   */
  @Override
  public CompletionStage<Claim> claimAsync(ClaimRequest request, Executor blocking) {
    try {
      checkTimes(request);
    } catch (IllegalArgumentException e) {
      return CompletableFuture.failedFuture(e);
    }
    return engine.claimAsync(request, blocking);
  }

  /**
   * Claims a batch pipelined: all requests are sent before any answer is awaited, so a batch of
   * distinct keys takes one round trip (in a cluster, one per master, in parallel). A key that
   * appears again in the batch is sent after the earlier answers, so it sees the earlier claim.
   * When the batch fails anywhere (an error or no answer for any request, too few replica
   * acknowledgements), every answer is collected first, and every claim it acquired, also those
   * answered after the failed one, is released as FAILED, pipelined and best effort, before the
   * first failure is thrown; so is a claim whose write went unanswered, if it took effect.
   */
  @Override
  public List<Claim> claimAll(List<ClaimRequest> requests) {
    for (ClaimRequest request : requests) {
      checkTimes(request);
    }
    return engine.claimAll(requests);
  }

  /**
   * Completes a batch pipelined: every completion is sent before any answer is awaited, so a batch
   * takes one round trip (in a cluster, one per master, in parallel), then one replica wait when
   * {@link Durability} asks for one. Each completion is atomic on its key; when the call throws,
   * some of the batch may have been stored.
   */
  @Override
  public Set<IdempotencyKey> completeAll(List<Completion> completions, Instant now,
      Duration retention) {
    checkTimes(now, retention);
    return engine.completeAll(completions, now, retention);
  }

  /**
   * {@link #complete} without blocking, natively: the same fenced script and, when
   * {@link Durability} asks for one, the same replica wait, answered on Lettuce's thread within
   * the command timeout. {@code blocking} is used only while the store has no connection.
   */
  @Override
  public CompletionStage<Void> completeAsync(IdempotencyKey key, long token, Outcome outcome,
      Instant now, Duration retention, Executor blocking) {
    try {
      checkTimes(now, retention);
    } catch (IllegalArgumentException e) {
      return CompletableFuture.failedFuture(e);
    }
    return engine.completeAsync(key, token, outcome, now, retention, blocking);
  }

  @Override
  public void complete(IdempotencyKey key, long token, Outcome outcome, Instant now,
      Duration retention) {
    checkTimes(now, retention);
    engine.complete(key, token, outcome, now, retention);
  }

  @Override
  public void fail(IdempotencyKey key, long token, String error, Instant now, Duration retention) {
    checkTimes(now, retention);
    engine.fail(key, token, error, now, retention);
  }

  /** The extensions pipelined: one round trip. */
  @Override
  public Set<IdempotencyKey> extendAll(List<HeldClaim> claims, Instant now, Duration lease) {
    checkTimes(now, lease);
    return engine.extendAll(claims, now, lease);
  }

  @Override
  public void release(IdempotencyKey key, long token, String reason, Instant now,
      Duration retention) {
    checkTimes(now, retention);
    engine.release(key, token, reason, now, retention);
  }

  @Override
  public Instant extend(IdempotencyKey key, long token, Instant now, Duration lease) {
    checkTimes(now, lease);
    return engine.extend(key, token, now, lease);
  }

  @Override
  public void checkpoint(IdempotencyKey key, long token, Checkpoint checkpoint, Instant now) {
    checkTimes(now, Duration.ZERO);
    engine.checkpoint(key, token, checkpoint, now);
  }

  /** The stored record, expired (by the caller's clock) or not, until purged or collected by Redis. */
  @Override
  public Optional<IdempotencyRecord> find(IdempotencyKey key) {
    return engine.find(key);
  }

  @Override
  public int purgeExpired(Instant now, int limit) {
    return engine.purgeExpired(now, limit);
  }

  @Override
  public int reapExpiredLeases(Instant now, int limit) {
    return engine.reapExpiredLeases(now, limit);
  }

  /**
   * Refuses, before anything is sent, times a record cannot hold (1970 to the year 2255: Lua
   * compares them exactly only that far). Encoded inside a command's send, such a time failed
   * the call as StoreUnavailableException, retryable and perhaps applied.
   */
  private static void checkTimes(ClaimRequest request) {
    Objects.requireNonNull(request, "request");
    RecordFormat.micros(request.now());
    RecordFormat.micros(request.expiresAt()); // the latest time a new record holds
  }

  private static void checkTimes(Instant now, Duration duration) {
    Objects.requireNonNull(now, "now");
    Objects.requireNonNull(duration, "duration");
    RecordFormat.checkTimes(now, duration);
  }

  @Override
  public int maxPayloadBytes() {
    return maxPayloadBytes;
  }

  /** Closes the store's connection, and the client too when the store created it from a URI. */
  @Override
  public void close() {
    engine.close();
  }

  @Override
  public String toString() {
    return "RedisStore[" + engine.description() + ", prefix " + keyPrefix + ", " + durability + "]";
  }
}
