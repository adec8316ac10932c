package dev.once.sqs;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.Once;
import dev.once.testkit.Await;
import dev.once.testkit.ChildJvm;
import dev.once.testkit.EffectsFile;
import dev.once.testkit.TestPostgres;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.services.sqs.model.Message;
import software.amazon.awssdk.services.sqs.model.MessageSystemAttributeName;
import software.amazon.awssdk.services.sqs.model.QueueAttributeName;

/**
 * Issue 23, scenario 4 for SQS, from outside: a consumer process gets SIGTERM (its shutdown hook
 * closes the consumer, as in a rolling deploy) while a batch of 20 (two receives of 10, gathered)
 * is half done. The messages that ran are deleted; none that did not run may be deleted, and they
 * must be visible again at once — not after their visibility timeout, here five minutes, longer
 * than the test. The next consumer handles every remaining message, each effect once. The store is
 * PostgreSQL, shared by both processes.
 *
 * <p>SQS does not promise an order, so the test does not assume one: the worker halts at e8,
 * whatever ran before it in the batch ran; everything else in the batch did not.
 */
class SigtermMidBatchTest {

  private static final Duration VISIBILITY = Duration.ofMinutes(5);

  @Test
  void sigtermWhileABatchIsHalfDoneLosesNothingAndRunsEachMessageOnce(@TempDir Path dir)
      throws Exception {
    String queue = ElasticMq.queue("sigterm");
    Set<String> all = new HashSet<>();
    for (int i = 1; i <= 20; i++) {
      ElasticMq.send(queue, "k" + i, "e" + i);
      all.add("e" + i);
    }
    Path effects = dir.resolve("effects.txt");
    long started = System.nanoTime();
    try (ChildJvm worker = ChildJvm.start(SigtermWorker.class, ElasticMq.ENDPOINT.toString(),
        queue, TestPostgres.jdbcUrl(), Postgres.TABLE, effects.toString(), "e8",
        Long.toString(VISIBILITY.toSeconds()))) {
      worker.awaitLine("HALF", Duration.ofSeconds(90));
      assertThat(attribute(queue, QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES_NOT_VISIBLE))
          .as("all 20 received by the worker, in its batch").isEqualTo(20);
      int exit = worker.terminate(Duration.ofSeconds(60));
      assertThat(exit).as("exited by SIGTERM, its hooks run\n%s", worker.output())
          .isEqualTo(143);
    }
    List<String> ran = EffectsFile.lines(effects);
    assertThat(ran).as("each ran once, e8 the last").doesNotHaveDuplicates().endsWith("e8");
    Set<String> unrun = new HashSet<>(all);
    ran.forEach(unrun::remove);
    assertThat(unrun).as("the batch was stopped half done").isNotEmpty();

    // The ones that ran were deleted; the rest is visible again at once (the worker reset their
    // visibility on its way out): received here from the outside, each for the second time.
    assertThat(ElasticMq.messagesIn(queue)).as("in the queue: the unrun ones").isEqualTo(
        unrun.size());
    List<Message> again = new ArrayList<>();
    while (again.size() < unrun.size()) {
      List<Message> got = ElasticMq.SQS.receiveMessage(b -> b.queueUrl(queue)
          .maxNumberOfMessages(10).waitTimeSeconds(0).visibilityTimeout(30)
          .messageSystemAttributeNames(MessageSystemAttributeName.APPROXIMATE_RECEIVE_COUNT))
          .messages();
      if (got.isEmpty()) {
        break;
      }
      again.addAll(got);
    }
    assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(VISIBILITY);
    assertThat(again).extracting(Message::body).as("visible again at once, none deleted unrun")
        .containsExactlyInAnyOrderElementsOf(unrun);
    assertThat(again).allSatisfy(m -> assertThat(m.attributes()
        .get(MessageSystemAttributeName.APPROXIMATE_RECEIVE_COUNT)).isEqualTo("2"));
    for (Message m : again) { // handed back at once, for the next consumer
      ElasticMq.SQS.changeMessageVisibility(b -> b.queueUrl(queue)
          .receiptHandle(m.receiptHandle()).visibilityTimeout(0));
    }

    ExecutorService thread = Executors.newSingleThreadExecutor();
    IdempotentSqsConsumer next = IdempotentSqsConsumer.builder(Once.builder(Postgres.STORE).build(),
            ElasticMq.SQS, queue, (message, attempt) -> EffectsFile.append(effects,
                message.body()))
        .batchSize(20).waitTime(Duration.ofSeconds(1)).build();
    thread.submit(next);
    try {
      Await.until("every message handled", () -> EffectsFile.counts(effects).size() == 20,
          () -> EffectsFile.counts(effects).toString());
      Await.until("every message deleted", () -> ElasticMq.messagesIn(queue) == 0,
          () -> ElasticMq.messagesIn(queue) + " left");
    } finally {
      next.close();
      thread.shutdownNow();
      thread.awaitTermination(10, TimeUnit.SECONDS);
    }
    assertThat(EffectsFile.counts(effects)).isEqualTo(IntStream.rangeClosed(1, 20).boxed()
        .collect(Collectors.toMap(i -> "e" + i, i -> 1L)));
  }

  private static int attribute(String queue, QueueAttributeName name) {
    return Integer.parseInt(ElasticMq.SQS.getQueueAttributes(b -> b.queueUrl(queue)
        .attributeNames(name)).attributes().getOrDefault(name, "0"));
  }
}
