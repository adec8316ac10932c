package dev.once.cli.demo;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.dynamodb.DynamoDbLocal;
import dev.once.redis.testing.RedisClusterProcess;
import dev.once.redis.testing.RedisServerProcess;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The commands on the stores reached through their own clients: Redis (standalone and Cluster,
 * private servers started here) and DynamoDB (DynamoDB Local in this JVM).
 */
class ServiceStoresTest {

  private static RedisServerProcess redis;

  @BeforeAll
  static void startRedis() {
    redis = RedisServerProcess.start();
  }

  @AfterAll
  static void stopRedis() {
    redis.close();
  }

  private static void assertOnceHeld(CommandRun run, int events) {
    assertThat(run.exitCode()).as(run.err()).isZero();
    assertThat(run.result().withOnce().doubleCharges()).isZero();
    assertThat(run.result().withOnce().lostEvents()).isZero();
    assertThat(run.result().withOnce().sideEffects()).isEqualTo(events);
    assertThat(run.result().withoutOnce().doubleCharges()).isPositive();
  }

  @Nested
  class Redis {

    @Test
    void demoInspectReapAndPurgeWork() {
      String uri = redis.uri();

      CommandRun demo = CommandRun.run("demo", "--store", uri, "--events", "200",
          "--lease-ms", "30");
      CommandRun inspect = CommandRun.run("inspect", "--store", uri, "--scope", demo.scope(),
          "evt-001");
      CommandRun reap = CommandRun.run("reap", "--store", uri);
      CommandRun purge = CommandRun.run("purge", "--store", uri, "--json");

      assertOnceHeld(demo, 200);
      assertThat(demo.out()).contains("Records: Redis " + uri + ", keys once:*");
      assertThat(inspect.exitCode()).as(inspect.err()).isZero();
      assertThat(inspect.out()).contains("status       COMPLETED");
      assertThat(reap.exitCode()).as(reap.err()).isZero();
      assertThat(reap.out()).startsWith("Reaped ");
      assertThat(purge.out()).startsWith("{\"purged\":0,");
    }

    @Test
    void inspectReadsRecordsUnderACustomKeyPrefix() {
      dev.once.IdempotencyKey key = dev.once.IdempotencyKey.of("payments.charge", "k-prefix");
      try (dev.once.redis.RedisStore payments = dev.once.redis.RedisStore.builder(redis.uri())
          .keyPrefix("payments:").build()) {
        dev.once.Once.builder(payments).build().execute(key, dev.once.Fingerprint.of("x"),
            dev.once.Codecs.utf8(), a -> "ch_1");
      }

      CommandRun missed = CommandRun.run("inspect", "--store", redis.uri(), "--scope",
          "payments.charge", "k-prefix");
      CommandRun found = CommandRun.run("inspect", "--store", redis.uri(), "--key-prefix",
          "payments:", "--scope", "payments.charge", "k-prefix");

      assertThat(missed.out() + missed.err()).doesNotContain("COMPLETED");
      assertThat(found.exitCode()).as(found.err()).isZero();
      assertThat(found.out()).contains("status       COMPLETED");
    }

    @Test
    void benchComparesWithSetNx() {
      CommandRun run = CommandRun.run("bench", "--store", redis.uri(), "--duration", "150ms",
          "--warmup", "0ms", "--rounds", "1", "--threads", "2");

      assertThat(run.exitCode()).as(run.err()).isZero();
      assertThat(run.out()).contains("SET NX PX + SET PX (Lettuce)", "GET (Lettuce)",
          "Once.call: replay of the stored outcome");
    }

    @Test
    void demoOnACluster() {
      try (RedisClusterProcess cluster = RedisClusterProcess.start(3)) {
        CommandRun demo = CommandRun.run("demo", "--store", cluster.storeUri(), "--events", "150",
            "--lease-ms", "30");

        assertOnceHeld(demo, 150);
        assertThat(demo.out()).contains("Records: Redis Cluster redis-cluster://");
      }
    }

    @Test
    void anUnreachableServerIsOneLine() {
      CommandRun run = CommandRun.run("demo", "--store", "redis://127.0.0.1:1");

      assertThat(run.exitCode()).isEqualTo(2);
      assertThat(run.err()).startsWith("once demo: cannot reach the store at redis://127.0.0.1:1")
          .doesNotContain("\tat ");
      assertThat(run.err().strip()).doesNotContain("\n");
    }

    @Test
    void aPasswordNeverAppearsInMessages() {
      CommandRun run = CommandRun.run("inspect", "--store", "redis://:s3cret@127.0.0.1:1",
          "--scope", "s", "k");

      assertThat(run.exitCode()).isEqualTo(2);
      assertThat(run.err()).doesNotContain("s3cret").contains("***");
    }
  }

  @Nested
  class DynamoDb {

    private String uri(String table) {
      return "dynamodb://local?endpoint=" + DynamoDbLocal.get().endpoint() + "&table=" + table;
    }

    @Test
    void aMissingTableIsOneLineNamingTheFixAndSchemaApplyCreatesIt() {
      String uri = uri(DynamoDbLocal.uniqueTable("cli"));

      CommandRun before = CommandRun.run("inspect", "--store", uri, "--scope", "s", "k");
      CommandRun apply = CommandRun.run("schema", "--apply", "--store", uri);
      CommandRun after = CommandRun.run("inspect", "--store", uri, "--scope", "s", "k");

      assertThat(before.exitCode()).isEqualTo(2);
      assertThat(before.err()).startsWith("once inspect: no table ")
          .contains("once schema --apply --store " + uri);
      assertThat(apply.exitCode()).as(apply.err()).isZero();
      assertThat(apply.out()).startsWith("Table ready: DynamoDB Local at ");
      assertThat(after.exitCode()).as(after.err()).isEqualTo(1); // the key has no record
    }

    @Test
    void demoRunsOnDynamoDbLocal() {
      CommandRun demo = CommandRun.run("demo", "--store", uri(DynamoDbLocal.uniqueTable("demo")),
          "--events", "100", "--workers", "4", "--lease-ms", "100");

      assertOnceHeld(demo, 100);
      assertThat(demo.out()).contains("Records: DynamoDB Local at ");
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"redis://", "redis:///0", "redis-cluster://", "dynamodb://",
      "dynamodb://mars", "dynamodb://local?tabel=x", "dynamodb://local?endpoint=ftp://x",
      "dynamodb://eu-west-1/path"})
  void badUrisAreUsageErrors(String uri) {
    CommandRun run = CommandRun.run("demo", "--store", uri);

    assertThat(run.exitCode()).isEqualTo(2);
    assertThat(run.err()).startsWith("once demo: store URI '").doesNotContain("\tat ");
  }
}
