package dev.once.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.Connection;
import dev.once.Once;
import dev.once.redis.RedisStore;
import dev.once.redis.testing.RedisServerProcess;
import dev.once.testkit.Await;
import dev.once.testkit.ChildJvm;
import dev.once.testkit.EffectsFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 23, scenario 4 for RabbitMQ, from outside: a consumer process gets SIGTERM (its shutdown
 * hook closes the subscription, as in a rolling deploy) while a batch of 20 is half done. No
 * message that did not run may be acknowledged — the queue holds all of them again once the
 * channel is closed — and the next consumer handles every remaining message, each effect once.
 */
class SigtermMidBatchTest {

  @Test
  void sigtermWhileABatchIsHalfDoneLosesNothingAndRunsEachMessageOnce(@TempDir Path dir)
      throws Exception {
    Rabbit.Topology t = Rabbit.topology("sigterm");
    try {
      for (int i = 1; i <= 20; i++) {
        Rabbit.publish(t.queue(), "k" + i, "e" + i);
      }
      Path effects = dir.resolve("effects.txt");
      try (RedisServerProcess redis = RedisServerProcess.start()) {
        try (ChildJvm worker = ChildJvm.start(SigtermWorker.class, t.queue(),
            t.deadLetterExchange(), redis.uri(), effects.toString(), "e8")) {
          worker.awaitLine("HALF", Duration.ofSeconds(90));
          assertThat(Rabbit.ready(t.queue())).as("the whole batch delivered to the worker")
              .isZero();
          int exit = worker.terminate(Duration.ofSeconds(60));
          assertThat(exit).as("exited by SIGTERM, its hooks run\n%s", worker.output())
              .isEqualTo(143);
        }
        assertThat(EffectsFile.counts(effects)).as("the messages run before the SIGTERM")
            .isEqualTo(once(1, 8));
        // The worker's connection is closed: whatever it did not acknowledge is ready again.
        Await.until("the unrun messages back in the queue", () -> Rabbit.ready(t.queue()) == 12,
            () -> Rabbit.ready(t.queue()) + " ready");
        assertThat(Rabbit.ready(t.queue())).as("none acknowledged unrun, none run left behind")
            .isEqualTo(12);

        try (RedisStore store = RedisStore.builder(redis.uri()).build();
            Connection connection = Rabbit.connect()) {
          Subscription next = IdempotentRabbitConsumer.builder(Once.builder(store).build(),
                  (delivery, attempt) -> EffectsFile.append(effects,
                      new String(delivery.getBody(), StandardCharsets.UTF_8)))
              .queue(t.queue()).deadLetterExchange(t.deadLetterExchange()).prefetch(100).build()
              .start(connection);
          try {
            Await.until("every message handled", () -> EffectsFile.counts(effects).size() == 20,
                () -> EffectsFile.counts(effects).toString());
          } finally {
            next.close(); // acknowledges what is final, closes the channel: the rest is requeued
          }
        }
      }
      assertThat(EffectsFile.counts(effects)).isEqualTo(once(1, 20));
      assertThat(Rabbit.ready(t.queue())).as("every message acknowledged, none requeued")
          .isZero();
      assertThat(Rabbit.ready(t.deadLetterQueue())).isZero();
    } finally {
      Rabbit.delete(t);
    }
  }

  /** e{from}..e{to}, each once. */
  private static Map<String, Long> once(int from, int to) {
    return IntStream.rangeClosed(from, to).boxed()
        .collect(Collectors.toMap(i -> "e" + i, i -> 1L));
  }
}
