package dev.once.redis.internal;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.pubsub.RedisPubSubAdapter;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * Listens on every Sentinel of a {@code redis-sentinel://} store for {@code +switch-master} of its
 * primary and reopens the store's connection when one comes, so that the next call connects to
 * the primary the Sentinels now name.
 *
 * <p>Why: a primary paused past the Sentinels' patience (a long GC-like pause, a partition) or
 * restarted quickly on its own data is still a primary in its own eyes when it comes back, and
 * the Sentinels wait several seconds before they demote it. Lettuce keeps a connection that
 * survived, or one it opened on an address a Sentinel gave just before the switch, and every
 * write on it is answered and then lost at the demotion (seen: {@code RedisSentinelTest}). The
 * Sentinels also kill the clients of the instances they reconfigure, but only then.
 *
 * <p>Subscribing never blocks nor fails the store: it starts when the store is built, and a
 * Sentinel that cannot be reached then is tried again each time the store opens its connection; a
 * subscription that is open is kept alive by Lettuce, which subscribes again after a reconnect.
 *
 * <p>What it does not close: Lettuce asks the first reachable Sentinel of the URI for the primary,
 * and the Sentinels other than the failover's leader learn of the switch a moment later (their
 * hello messages, about a second); a connection opened in that moment, or reopened by Lettuce
 * after a blip, can still reach an old primary that is up. Writes there with
 * {@code Durability.replicas(n)} are answered only if a replica acknowledges them.
 */
public final class SentinelSwitches implements AutoCloseable {

  private static final String CHANNEL = "+switch-master";

  private final RedisClient client;
  private final List<RedisURI> sentinels;
  private final String master;
  private final Runnable onSwitch;
  /** One per Sentinel, in the order of {@link #sentinels}; null or failed: not listening. */
  private final List<CompletableFuture<StatefulRedisPubSubConnection<String, String>>> listening;
  private boolean closed;

  /**
   * @param uri      the store's {@code redis-sentinel://} URI: its Sentinels and primary name
   * @param onSwitch runs on a Lettuce thread when a Sentinel announces a new primary
   */
  public SentinelSwitches(RedisClient client, RedisURI uri, Runnable onSwitch) {
    this.client = client;
    this.sentinels = List.copyOf(uri.getSentinels());
    this.master = uri.getSentinelMasterId();
    this.onSwitch = onSwitch;
    this.listening = new ArrayList<>();
    for (int i = 0; i < sentinels.size(); i++) {
      listening.add(null);
    }
  }

  /** Whether {@code uri} names Sentinels (a {@code redis-sentinel://} URI). */
  public static boolean named(RedisURI uri) {
    return uri.getSentinelMasterId() != null && !uri.getSentinels().isEmpty();
  }

  /** Starts listening on every Sentinel that is not listened to yet; never blocks. */
  public synchronized void listen() {
    if (closed) {
      return;
    }
    for (int i = 0; i < sentinels.size(); i++) {
      CompletableFuture<StatefulRedisPubSubConnection<String, String>> current = listening.get(i);
      if (current != null && !current.isCompletedExceptionally()) {
        continue;
      }
      CompletableFuture<StatefulRedisPubSubConnection<String, String>> subscribed;
      try {
        subscribed = client.connectPubSubAsync(StringCodec.UTF8, sentinels.get(i))
            .toCompletableFuture()
            .thenCompose(connection -> {
              connection.addListener(new RedisPubSubAdapter<>() {
                @Override
                public void message(String channel, String message) {
                  // "<primary name> <old ip> <old port> <new ip> <new port>"
                  if (message != null && message.startsWith(master + " ")) {
                    onSwitch.run();
                  }
                }
              });
              return connection.async().subscribe(CHANNEL).toCompletableFuture()
                  .handle((ok, failed) -> {
                    if (failed != null) {
                      connection.closeAsync(); // not listening: the next listen() tries again
                      throw new java.util.concurrent.CompletionException(failed);
                    }
                    return connection;
                  });
            });
      } catch (RuntimeException e) {
        subscribed = CompletableFuture.failedFuture(e);
      }
      listening.set(i, subscribed);
      subscribed.thenAccept(connection -> {
        boolean keep;
        synchronized (this) {
          keep = !closed;
        }
        if (!keep) {
          connection.closeAsync();
        }
      });
    }
  }

  @Override
  public synchronized void close() {
    closed = true;
    for (CompletableFuture<StatefulRedisPubSubConnection<String, String>> f : listening) {
      if (f != null && f.isDone() && !f.isCompletedExceptionally()) {
        f.join().closeAsync();
      }
    }
  }
}
