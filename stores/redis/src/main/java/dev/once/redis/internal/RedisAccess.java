package dev.once.redis.internal;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.lettuce.core.cluster.models.partitions.RedisClusterNode;
import io.lettuce.core.codec.ByteArrayCodec;
import java.time.Duration;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * One open connection to Redis, standalone or Cluster, seen through the commands both share. In a
 * cluster, Lettuce routes each keyed command to the master of its slot and follows {@code MOVED}
 * and {@code ASK} redirects. {@link RedisConnector} opens it.
 */
public abstract sealed class RedisAccess implements AutoCloseable {

  private final String description;

  private RedisAccess(String description) {
    this.description = description;
  }

  /** Opens a connection through {@code client} (blocking: call it off the caller's thread). */
  public static RedisAccess standalone(RedisClient client, String description) {
    return new Standalone(client.connect(ByteArrayCodec.INSTANCE), description);
  }

  /** A connection through {@code client} to {@code uri}, opened without blocking. */
  public static CompletableFuture<RedisAccess> standaloneAsync(RedisClient client, RedisURI uri,
      String description) {
    return client.connectAsync(ByteArrayCodec.INSTANCE, uri).toCompletableFuture()
        .thenApply(c -> new Standalone(c, description));
  }

  /**
   * Opens a cluster connection through {@code client}, reading the topology first if the client
   * has none yet (blocking: call it off the caller's thread).
   */
  public static RedisAccess cluster(RedisClusterClient client, String description) {
    return new Cluster(client.connect(ByteArrayCodec.INSTANCE), description);
  }

  /** The commands, on the shared (multiplexed, thread-safe) connection. */
  public abstract RedisClusterAsyncCommands<byte[], byte[]> commands();

  /**
   * {@code WAIT replicas timeout} on the connection that wrote each of {@code keys} (one per
   * master); completes with the fewest acknowledgements any of them got.
   */
  public abstract CompletionStage<Long> waitForReplicas(Collection<byte[]> keys, int replicas,
      Duration timeout);

  /** Where the store connects to, for messages. */
  public String description() {
    return description;
  }

  /** Whether this is a Redis Cluster connection. */
  public abstract boolean isCluster();

  /** Closes the connection (the client stays open). */
  @Override
  public void close() {
    closeConnection();
  }

  abstract void closeConnection();

  private static final class Standalone extends RedisAccess {
    private final StatefulRedisConnection<byte[], byte[]> connection;

    Standalone(StatefulRedisConnection<byte[], byte[]> connection, String description) {
      super(description);
      this.connection = connection;
    }

    @Override
    public RedisClusterAsyncCommands<byte[], byte[]> commands() {
      return connection.async();
    }

    @Override
    public CompletionStage<Long> waitForReplicas(Collection<byte[]> keys, int replicas,
        Duration timeout) {
      // WAIT covers every earlier write of this connection, ours included.
      return connection.async().waitForReplication(replicas, timeout.toMillis());
    }

    @Override
    public boolean isCluster() {
      return false;
    }

    @Override
    void closeConnection() {
      connection.close();
    }
  }

  private static final class Cluster extends RedisAccess {
    private final StatefulRedisClusterConnection<byte[], byte[]> connection;

    Cluster(StatefulRedisClusterConnection<byte[], byte[]> connection, String description) {
      super(description);
      this.connection = connection;
    }

    @Override
    public RedisClusterAsyncCommands<byte[], byte[]> commands() {
      return connection.async();
    }

    @Override
    public CompletionStage<Long> waitForReplicas(Collection<byte[]> keys, int replicas,
        Duration timeout) {
      // WAIT counts the writes of the connection it is sent on: the node connection Lettuce
      // routed the writes through, i.e. the one to the slot's master, by host and port.
      Map<String, RedisClusterNode> masters = new LinkedHashMap<>();
      for (byte[] key : keys) {
        RedisClusterNode master = connection.getPartitions().getMasterBySlot(SlotHash.getSlot(key));
        if (master == null) {
          return CompletableFuture.failedFuture(new IllegalStateException(
              "no master serves slot " + SlotHash.getSlot(key) + " in the known topology"));
        }
        masters.putIfAbsent(master.getUri().getHost() + ":" + master.getUri().getPort(), master);
      }
      List<CompletableFuture<Long>> acks = masters.values().stream()
          .map(m -> connection.getConnectionAsync(m.getUri().getHost(), m.getUri().getPort())
              .thenCompose(c -> c.async().waitForReplication(replicas, timeout.toMillis()))
              .toCompletableFuture())
          .toList();
      return CompletableFuture.allOf(acks.toArray(CompletableFuture[]::new))
          .thenApply(v -> acks.stream().mapToLong(CompletableFuture::join).min().orElse(replicas));
    }

    @Override
    public boolean isCluster() {
      return true;
    }

    @Override
    void closeConnection() {
      connection.close();
    }
  }
}
