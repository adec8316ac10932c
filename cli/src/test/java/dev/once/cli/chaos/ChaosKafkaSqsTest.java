package dev.once.cli.chaos;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.cli.chaos.ChaosBrokerAudit.Figures;
import dev.once.cli.chaos.ChaosBrokerTest.Run;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.common.test.KafkaClusterTestKit;
import org.apache.kafka.common.test.TestKitNodes;
import org.apache.kafka.common.utils.Exit;
import org.elasticmq.rest.sqs.SQSRestServer;
import org.elasticmq.rest.sqs.SQSRestServerBuilder;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code once chaos --broker kafka} against a KRaft broker started in this JVM (the worker JVMs
 * reach it on its loopback port), and {@code --broker sqs} against ElasticMQ in this JVM: short
 * runs with kills, a freeze and SIGTERMs, then the audit.
 */
class ChaosKafkaSqsTest {

  @TempDir
  Path dir;

  /**
   * The arguments of a run: the test's short one, or with {@code -Donce.chaos.duration=60s
   * -Donce.chaos.workers=3} (and options of {@code -Donce.chaos.args="..."}) a longer one with
   * the command's default faults (the figures of docs/reliability.md), printed.
   */
  private static String[] args(String broker, String uri, Path runDirectory, String... test) {
    List<String> args = new ArrayList<>(List.of("--broker", broker, "--broker-uri", uri,
        "--dir", runDirectory.toString()));
    String duration = System.getProperty("once.chaos.duration");
    if (duration == null) {
      args.addAll(List.of(test));
    } else {
      args.addAll(List.of("--duration", duration, "--workers",
          System.getProperty("once.chaos.workers", "3")));
      String more = System.getProperty("once.chaos.args", "").trim();
      if (!more.isEmpty()) {
        args.addAll(List.of(more.split("\\s+")));
      }
    }
    return args.toArray(String[]::new);
  }

  @Test
  void onceHoldsOnKafkaWhileWorkersAreKilledFrozenAndSentSigterm() throws Exception {
    // The broker runs in this JVM: its fatal-fault handlers would end it; here they print.
    Exit.setHaltProcedure((code, message) -> System.err.println("Kafka asked to halt (" + code
        + "): " + message + "; ignored in tests"));
    Exit.setExitProcedure((code, message) -> System.err.println("Kafka asked to exit (" + code
        + "): " + message + "; ignored in tests"));
    try (KafkaClusterTestKit cluster = new KafkaClusterTestKit.Builder(new TestKitNodes.Builder()
        .setCombined(true).setNumBrokerNodes(1).setNumControllerNodes(1).build())
        .setConfigProp("offsets.topic.replication.factor", "1")
        .setConfigProp("offsets.topic.num.partitions", "1")
        .setConfigProp("transaction.state.log.replication.factor", "1")
        .setConfigProp("transaction.state.log.min.isr", "1")
        .setConfigProp("group.initial.rebalance.delay.ms", "0")
        .build()) {
      cluster.format();
      cluster.startup();
      cluster.waitForReadyBrokers();
      Path runDirectory = dir.resolve("run");
      Run run = ChaosBrokerTest.chaos(args("kafka", cluster.bootstrapServers(), runDirectory,
          "--duration", "15s", "--workers", "2", "--lease", "1s", "--kill-every", "2s-4s",
          "--freeze-every", "3s-5s", "--freeze-for", "7s", "--term-every", "3s-5s",
          "--poison", "0.05"));

      System.out.println(run.out() + run.err());
      Figures f = ChaosBrokerTest.assertHeld(run, runDirectory);
      assertThat(run.out()).contains("consuming from Kafka", "Once held on Kafka");
      assertThat(f.poisonDeadLettered()).isEqualTo(f.poison());
    }
  }

  @Test
  void onceHoldsOnSqsWhileWorkersAreKilledFrozenAndSentSigterm() throws Exception {
    SQSRestServer server = SQSRestServerBuilder.withDynamicPort().withInterface("127.0.0.1")
        .start();
    try {
      int port = server.waitUntilStarted().localAddress().getPort();
      Path runDirectory = dir.resolve("run");
      Run run = ChaosBrokerTest.chaos(args("sqs", "http://127.0.0.1:" + port, runDirectory,
          "--duration", "12s", "--workers", "2", "--lease", "1s", "--kill-every", "1s-2s",
          "--freeze-every", "2s-4s", "--term-every", "2s-4s", "--poison", "0.05",
          "--batch", "10"));

      System.out.println(run.out() + run.err());
      Figures f = ChaosBrokerTest.assertHeld(run, runDirectory);
      assertThat(run.out()).contains("consuming from SQS", "Once held on SQS");
      assertThat(f.poisonDeadLettered()).isEqualTo(f.poison());
    } finally {
      server.stopAndWait();
    }
  }
}
