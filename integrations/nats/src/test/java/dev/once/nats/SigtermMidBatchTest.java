package dev.once.nats;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.Once;
import dev.once.testkit.Await;
import dev.once.testkit.ChildJvm;
import dev.once.testkit.EffectsFile;
import dev.once.testkit.TestPostgres;
import io.nats.client.Connection;
import io.nats.client.ConsumerContext;
import io.nats.client.FetchConsumeOptions;
import io.nats.client.FetchConsumer;
import io.nats.client.Message;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 23, scenario 4 for NATS JetStream, from outside: a consumer process gets SIGTERM (its
 * shutdown hook closes the consumer, as in a rolling deploy) while a fetch of 20 is half done. No
 * message that did not run may be acked; they must come back at once (nak'd), not after the
 * AckWait — here a minute, longer than the test — and the next consumer handles every remaining
 * message, each effect once. The store is PostgreSQL, shared by both processes.
 */
class SigtermMidBatchTest {

  private static final Duration ACK_WAIT = Duration.ofSeconds(60);

  @Test
  void sigtermWhileABatchIsHalfDoneLosesNothingAndRunsEachMessageOnce(@TempDir Path dir)
      throws Exception {
    Broker.Topology t = Broker.create("sigterm", ACK_WAIT, Duration.ofMinutes(2));
    try {
      for (int i = 1; i <= 20; i++) {
        Broker.publish(t.subject(), "e" + i, "Nats-Msg-Id", "k" + i);
      }
      Path effects = dir.resolve("effects.txt");
      long started = System.nanoTime();
      try (ChildJvm worker = ChildJvm.start(SigtermWorker.class, Broker.URL, t.stream(),
          t.consumer(), TestPostgres.jdbcUrl(), Postgres.TABLE, effects.toString(), "e8")) {
        worker.awaitLine("HALF", Duration.ofSeconds(90));
        int exit = worker.terminate(Duration.ofSeconds(60));
        assertThat(exit).as("exited by SIGTERM, its hooks run\n%s", worker.output())
            .isEqualTo(143);
      }
      assertThat(EffectsFile.counts(effects)).as("the messages run before the SIGTERM")
          .isEqualTo(once(1, 8));
      Await.until("the acks of the messages that ran", () -> Broker.info(t).getAckFloor()
          .getStreamSequence() >= 8, () -> Broker.info(t).toString());
      assertThat(Broker.info(t).getAckFloor().getStreamSequence()).as("acked: e1..e8, no further")
          .isEqualTo(8);

      // Read from the outside, not acked: the 12 unrun are there again at once (the worker nak'd
      // them), each delivered for the second time — so all 20 were in the worker's one batch.
      ConsumerContext raw = Broker.ADMIN.jetStream().getConsumerContext(t.stream(), t.consumer());
      List<Message> again = new ArrayList<>();
      try (FetchConsumer fetch = raw.fetch(FetchConsumeOptions.builder().maxMessages(12)
          .expiresIn(5_000).build())) {
        for (Message m = fetch.nextMessage(); m != null; m = fetch.nextMessage()) {
          again.add(m);
        }
      }
      assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(ACK_WAIT);
      assertThat(again).extracting(m -> Broker.text(m.getData()))
          .as("the unrun messages, none acked").containsExactlyInAnyOrderElementsOf(
              IntStream.rangeClosed(9, 20).mapToObj(i -> "e" + i).toList());
      assertThat(again).allSatisfy(m -> assertThat(m.metaData().deliveredCount()).isEqualTo(2));
      again.forEach(Message::nak); // handed back at once, for the next consumer
      Broker.ADMIN.flush(Duration.ofSeconds(5));

      Connection connection = Broker.connect();
      ExecutorService thread = Executors.newSingleThreadExecutor();
      IdempotentNatsConsumer next = IdempotentNatsConsumer.builder(
              Once.builder(Postgres.STORE).build(),
              (message, attempt) -> EffectsFile.append(effects, Broker.text(message.getData())))
          .connection(connection).stream(t.stream()).consumer(t.consumer()).batchSize(100)
          .build();
      thread.submit(next);
      try {
        Await.until("every message handled", () -> EffectsFile.counts(effects).size() == 20,
            () -> EffectsFile.counts(effects).toString());
        Await.until("everything acked", () -> Broker.allSettled(t), () -> Broker.info(t)
            .toString());
      } finally {
        next.close();
        thread.shutdownNow();
        thread.awaitTermination(10, TimeUnit.SECONDS);
        connection.close();
      }
      assertThat(EffectsFile.counts(effects)).isEqualTo(once(1, 20));
    } finally {
      Broker.delete(t);
    }
  }

  /** e{from}..e{to}, each once. */
  private static Map<String, Long> once(int from, int to) {
    return IntStream.rangeClosed(from, to).boxed()
        .collect(Collectors.toMap(i -> "e" + i, i -> 1L));
  }
}
