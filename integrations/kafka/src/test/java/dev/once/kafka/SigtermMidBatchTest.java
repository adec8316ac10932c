package dev.once.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.Once;
import dev.once.redis.RedisStore;
import dev.once.redis.testing.RedisServerProcess;
import dev.once.testkit.Await;
import dev.once.testkit.ChildJvm;
import dev.once.testkit.EffectsFile;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 23, scenario 4 for Kafka, from outside: a consumer process gets SIGTERM (its shutdown
 * hook stops the loop, as in a rolling deploy) while a poll batch is half done. Nothing may be
 * committed past a record that did not run — even with auto-commit on, the harshest case — and
 * the next consumer handles every remaining record, each effect once.
 */
class SigtermMidBatchTest {

  @Test
  void sigtermWhileABatchIsHalfDoneLosesNothingAndRunsEachRecordOnce(@TempDir Path dir)
      throws Exception {
    String topic = Broker.topic(Broker.unique("sigterm"), 1);
    String group = Broker.unique("group");
    for (int i = 1; i <= 20; i++) {
      Broker.send(topic, 0, "k" + i, "e" + i);
    }
    Path effects = dir.resolve("effects.txt");
    try (RedisServerProcess redis = RedisServerProcess.start()) {
      try (ChildJvm worker = ChildJvm.start(SigtermWorker.class,
          Broker.CLUSTER.bootstrapServers(), topic, group, redis.uri(), effects.toString(), "e8")) {
        worker.awaitLine("HALF", Duration.ofSeconds(90));
        int exit = worker.terminate(Duration.ofSeconds(60));
        assertThat(exit).as("exited by SIGTERM, its hooks run\n%s", worker.output())
            .isEqualTo(143);
      }
      assertThat(EffectsFile.counts(effects)).hasSize(8).allSatisfy((e, n) -> assertThat(n).isOne());
      assertThat(Broker.committed(group)).as("committed up to the records that ran")
          .isEqualTo(Map.of(0, 8L));

      try (RedisStore store = RedisStore.builder(redis.uri()).build()) {
        IdempotentConsumerLoop<String, String> next = IdempotentConsumer.<String, String>builder(
                Once.builder(store).build(),
                (record, attempt) -> EffectsFile.append(effects, record.value()))
            .deadLetters(letter -> {}).pollTimeout(Duration.ofMillis(100)).build()
            .loop(Broker.consumer(group), List.of(topic));
        Thread thread = new Thread(next);
        thread.start();
        try {
          Await.until("every record handled", () -> EffectsFile.counts(effects).size() == 20,
              () -> EffectsFile.counts(effects).toString());
          Await.until("everything committed", () -> Map.of(0, 20L).equals(Broker.committed(group)));
        } finally {
          next.close();
        }
      }
    }
    assertThat(EffectsFile.counts(effects)).hasSize(20).allSatisfy((e, n) -> assertThat(n).isOne());
  }
}
