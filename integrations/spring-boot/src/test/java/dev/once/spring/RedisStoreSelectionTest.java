package dev.once.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.Codecs;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.Once;
import dev.once.redis.RedisStore;
import dev.once.spi.IdempotencyStore;
import dev.once.spring.autoconfigure.OnceAutoConfiguration;
import io.lettuce.core.RedisClient;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.time.Instant;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/** The store is Redis when the context has a Lettuce client and no DataSource (real redis-server). */
class RedisStoreSelectionTest {

  private static Process server;
  private static int port;

  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(OnceAutoConfiguration.class));

  @BeforeAll
  static void startRedis() throws Exception {
    try (ServerSocket socket = new ServerSocket(0)) {
      port = socket.getLocalPort();
    }
    server = new ProcessBuilder("redis-server", "--port", Integer.toString(port), "--bind",
        "127.0.0.1", "--save", "", "--appendonly", "no")
        .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
    Instant deadline = Instant.now().plus(Duration.ofSeconds(10));
    while (true) {
      try (Socket probe = new Socket("127.0.0.1", port)) {
        return;
      } catch (IOException notYet) {
        if (Instant.now().isAfter(deadline) || !server.isAlive()) {
          throw new IllegalStateException("redis-server did not start on port " + port, notYet);
        }
        Thread.onSpinWait();
      }
    }
  }

  @AfterAll
  static void stopRedis() throws InterruptedException {
    if (server != null) {
      server.destroy();
      server.waitFor();
    }
  }

  @Test
  void aLettuceClientBeanMakesARedisStore() {
    runner.withBean(RedisClient.class, () -> RedisClient.create("redis://127.0.0.1:" + port),
            b -> b.setDestroyMethodName("shutdown"))
        // A loaded machine can take seconds to connect: the 2 s default would make this flaky.
        .withPropertyValues("once.redis.key-prefix=spring-test:", "once.redis.command-timeout=30s")
        .run(context -> {
          assertThat(context).hasNotFailed();
          IdempotencyStore store = context.getBean(IdempotencyStore.class);
          assertThat(store).isInstanceOf(RedisStore.class);
          assertThat(((RedisStore) store).keyPrefix()).isEqualTo("spring-test:");
          assertRunsOnce(context.getBean(Once.class), "client");
        });
  }

  @Test
  void aDataSourceWinsOverRedisUnlessRedisIsAskedFor() {
    runner.withBean(RedisClient.class, () -> RedisClient.create("redis://127.0.0.1:" + port),
            b -> b.setDestroyMethodName("shutdown"))
        .withBean(DataSource.class, TestDatabases::sqlite)
        .run(context -> assertThat(context.getBean(IdempotencyStore.class))
            .isNotInstanceOf(RedisStore.class));
    runner.withBean(RedisClient.class, () -> RedisClient.create("redis://127.0.0.1:" + port),
            b -> b.setDestroyMethodName("shutdown"))
        .withBean(DataSource.class, TestDatabases::sqlite)
        .withPropertyValues("once.store=redis")
        .run(context -> assertThat(context.getBean(IdempotencyStore.class))
            .isInstanceOf(RedisStore.class));
  }

  private static void assertRunsOnce(Once once, String key) {
    int[] runs = {0};
    IdempotencyKey k = IdempotencyKey.of("redis-test", key + "-" + System.nanoTime());
    for (int i = 0; i < 2; i++) {
      assertThat(once.execute(k, Fingerprint.of("x"), Codecs.utf8(), a -> "v" + ++runs[0]))
          .isEqualTo("v1");
    }
    assertThat(runs[0]).isEqualTo(1);
  }
}
