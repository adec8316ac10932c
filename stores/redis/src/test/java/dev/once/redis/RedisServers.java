package dev.once.redis;

import dev.once.redis.testing.RedisClusterProcess;
import dev.once.redis.testing.RedisServerProcess;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.ClusterTopologyRefreshOptions;
import io.lettuce.core.cluster.RedisClusterClient;
import java.time.Duration;

/**
 * The Redis servers the tests share, started once per JVM (on first use) on free loopback ports
 * and killed at exit. Each test works in keys of its own (its own scope or key prefix).
 */
final class RedisServers {

  private RedisServers() {}

  /** One standalone server and a client on it. */
  static final class Standalone {
    static final RedisServerProcess SERVER = RedisServerProcess.start();
    static final RedisClient CLIENT = RedisClient.create(SERVER.uri());

    static {
      CLIENT.setOptions(ClientOptions.builder()
          .timeoutOptions(TimeoutOptions.enabled(Duration.ofSeconds(10))).build());
      Runtime.getRuntime().addShutdownHook(new Thread(() -> CLIENT.shutdown(Duration.ZERO,
          Duration.ofSeconds(1))));
    }

    private Standalone() {}
  }

  /** One 3-master cluster and a client on it. */
  static final class Cluster {
    static final RedisClusterProcess CLUSTER = RedisClusterProcess.start(3);
    static final RedisClusterClient CLIENT = RedisClusterClient.create(CLUSTER.uri());

    static {
      CLIENT.setOptions(ClusterClientOptions.builder()
          .timeoutOptions(TimeoutOptions.enabled(Duration.ofSeconds(10)))
          .topologyRefreshOptions(ClusterTopologyRefreshOptions.builder()
              .enableAllAdaptiveRefreshTriggers().build())
          .build());
      Runtime.getRuntime().addShutdownHook(new Thread(() -> CLIENT.shutdown(Duration.ZERO,
          Duration.ofSeconds(1))));
    }

    private Cluster() {}
  }
}
