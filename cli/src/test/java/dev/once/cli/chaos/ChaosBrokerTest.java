package dev.once.cli.chaos;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import dev.once.cli.OnceCommand;
import dev.once.cli.chaos.ChaosBrokerAudit.Figures;
import io.nats.client.JetStreamApiException;
import io.nats.client.Nats;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code once chaos --broker} for real, on the RabbitMQ (127.0.0.1:5672, guest) and the NATS with
 * JetStream (127.0.0.1:4222) of this machine, skipped when either is not there: worker JVMs
 * consuming through the adapters are killed, frozen past their lease and sent SIGTERM for about
 * 12 s, then the audit. A sabotaged consumer must fail it.
 */
class ChaosBrokerTest {

  static final String RABBIT_URI = System.getenv().getOrDefault("ONCE_RABBITMQ_URI",
      "amqp://guest:guest@127.0.0.1:5672");
  static final String NATS_URI = System.getenv().getOrDefault("ONCE_NATS_URL",
      "nats://127.0.0.1:4222");

  @TempDir
  Path dir;

  /** One in-process run of {@code once chaos ARGS}. */
  record Run(int exitCode, String out, String err, ChaosBrokerAudit.Result result) {}

  static Run chaos(String... args) {
    List<String> line = new ArrayList<>(List.of("chaos"));
    line.addAll(List.of(args));
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine commandLine = new CommandLine(new OnceCommand());
    commandLine.setOut(new PrintWriter(out, true));
    commandLine.setErr(new PrintWriter(err, true));
    int exitCode = commandLine.execute(line.toArray(String[]::new));
    ChaosCommand chaos = commandLine.getSubcommands().get("chaos").getCommand();
    return new Run(exitCode, out.toString(), err.toString(), chaos.lastBrokerResult());
  }

  static boolean listening(int port) {
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress("127.0.0.1", port), 1_000);
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  /** What must hold after a run of every broker that held. */
  static Figures assertHeld(Run run, Path runDirectory) throws IOException {
    assertThat(run.exitCode()).as(run.out() + run.err()).isZero();
    assertThat(run.err()).isEmpty();
    Figures f = run.result().figures();
    assertThat(run.result().violations()).isEmpty();
    assertThat(f.faults().kills()).isGreaterThanOrEqualTo(1);
    assertThat(f.faults().freezes()).isGreaterThanOrEqualTo(1);
    assertThat(f.faults().terms()).isGreaterThanOrEqualTo(1);
    assertThat(f.events()).isGreaterThan(50);
    assertThat(f.duplicates()).isPositive();
    assertThat(f.poison()).isPositive();
    assertThat(f.dedupEffects()).isEqualTo(f.events() - f.poison());
    assertThat(f.poisonDeadLettered()).isEqualTo(f.poison());
    assertThat(f.lost()).isZero();
    assertThat(f.unsettled()).isZero();
    // The workers printed nothing: no error at all.
    assertThat(Files.readString(runDirectory.resolve(ChaosWorkers.LOG))).isEmpty();
    return f;
  }

  static String destination(Run run) {
    Matcher m = Pattern.compile("(once-chaos-[a-z0-9]+)").matcher(run.out());
    assertThat(m.find()).as(run.out()).isTrue();
    return m.group(1);
  }

  @Test
  void onceHoldsOnRabbitMqWhileWorkersAreKilledFrozenAndSentSigterm() throws Exception {
    assumeTrue(listening(5672), "no RabbitMQ on 127.0.0.1:5672");
    Path runDirectory = dir.resolve("run");
    Run run = chaos("--broker", "rabbitmq", "--broker-uri", RABBIT_URI, "--duration", "12s",
        "--workers", "2", "--lease", "1s", "--kill-every", "1s-2s", "--freeze-every", "2s-4s",
        "--term-every", "2s-4s", "--poison", "0.05", "--dir", runDirectory.toString());

    Figures f = assertHeld(run, runDirectory);
    assertThat(run.out())
        .contains("consuming from RabbitMQ", "(same message-id)", "SIGTERM a worker (graceful "
            + "stop) every 2s-4s", "kill -9 a worker every 1s-2s")
        .containsPattern("effects with dedupe \\(Attempt\\.key\\(\\)\\)\\s+\\d+\\s+1 per event\\s+ok")
        .containsPattern("poison events dead-lettered\\s+" + f.poison() + "\\s+1 per poison\\s+ok")
        .contains("Once held on RabbitMQ");
    // The run's queues and exchange are gone with it.
    String queue = destination(run);
    ConnectionFactory factory = new ConnectionFactory();
    factory.setUri(RABBIT_URI);
    try (Connection connection = factory.newConnection()) {
      for (String name : List.of(queue, queue + ".dlq")) {
        Channel channel = connection.createChannel();
        assertThatThrownBy(() -> channel.queueDeclarePassive(name)).as(name)
            .isInstanceOf(IOException.class);
      }
    }
  }

  @Test
  void onceHoldsOnNatsJetStreamWhileWorkersAreKilledFrozenAndSentSigterm() throws Exception {
    assumeTrue(listening(4222), "no NATS on 127.0.0.1:4222");
    Path runDirectory = dir.resolve("run");
    Run run = chaos("--broker", "nats", "--broker-uri", NATS_URI, "--duration", "12s",
        "--workers", "2", "--lease", "1s", "--kill-every", "1s-2s", "--freeze-every", "2s-4s",
        "--term-every", "2s-4s", "--poison", "0.05", "--json", "--dir", runDirectory.toString());

    Figures f = assertHeld(run, runDirectory);
    // --json: one object, nothing else.
    assertThat(run.out().strip().lines()).hasSize(1);
    assertThat(run.out()).startsWith("{\"events\":" + f.events() + ",")
        .contains("\"broker\":\"nats\"", "\"held\":true", "\"violations\":[]",
            "\"poison_dead_lettered\":" + f.poison());
    String stream = destination(run);
    try (io.nats.client.Connection nats = Nats.connect(NATS_URI)) {
      for (String name : List.of(stream, stream + "-dlq")) {
        assertThatThrownBy(() -> nats.jetStreamManagement().getStreamInfo(name)).as(name)
            .isInstanceOf(JetStreamApiException.class);
      }
    }
  }

  @Test
  void theAuditCatchesASabotagedBrokerConsumer() {
    assumeTrue(listening(4222), "no NATS on 127.0.0.1:4222");
    // Kills every half second or so into workers whose batches hold effects made and outcomes
    // not stored: the takeovers run them again, under a key that changed.
    Run run = chaos("--broker", "nats", "--broker-uri", NATS_URI, "--sabotage", "--duration",
        "10s", "--workers", "2", "--lease", "1s", "--work", "40ms", "--kill-every", "500ms-1s",
        "--freeze-every", "2s-4s", "--dir", dir.resolve("run").toString());

    assertThat(run.exitCode()).as(run.out() + run.err()).isEqualTo(1);
    Figures f = run.result().figures();
    assertThat(f.dedupDoubled()).isPositive();
    assertThat(f.dedupEffects()).isGreaterThan(f.events() - f.poison());
    // What the sabotage cannot break: nothing is lost, poison is dead-lettered.
    assertThat(f.lost()).isZero();
    assertThat(f.poisonNotDeadLettered()).isZero();
    assertThat(run.err()).contains("once chaos: VIOLATION: " + f.dedupDoubled()
        + " events made their deduplicated effect more than once");
    assertThat(run.out()).contains("SABOTAGED", "VIOLATION: " + f.dedupDoubled() + " doubled",
        "Once did NOT hold", "Run directory kept");
  }

  @Test
  void badBrokerOptionsAndUnreachableBrokersAreOneLineWithExitCodeTwo() {
    String[][] cases = {
        {"--broker", "activemq"},
        {"--broker", "rabbitmq", "--batch", "0"},
        {"--broker", "nats", "--poison", "0.9"},
        {"--broker", "nats", "--term-every", "3s-1s"},
        {"--broker", "nats", "--region", "eu-west-1"},
        {"--term-every", "1s-2s"},
        {"--broker-uri", "nats://127.0.0.1:4222"},
        {"--broker", "rabbitmq", "--broker-uri", "http://127.0.0.1:5672"},
        {"--broker", "rabbitmq", "--broker-uri", "amqp://guest:guest@127.0.0.1:1", "--dir",
            dir.resolve("r1").toString()},
        {"--broker", "nats", "--broker-uri", "nats://127.0.0.1:1", "--dir",
            dir.resolve("r2").toString()},
        {"--broker", "sqs", "--broker-uri", "http://127.0.0.1:1", "--dir",
            dir.resolve("r3").toString()},
    };
    for (String[] args : cases) {
      Run run = chaos(args);
      assertThat(run.exitCode()).as(String.join(" ", args) + ": " + run.err()).isEqualTo(2);
      assertThat(run.out()).as(String.join(" ", args)).isEmpty();
      assertThat(run.err().lines()).as(String.join(" ", args)).hasSize(1)
          .allMatch(l -> l.startsWith("once chaos: "));
    }
    assertThat(chaos("--broker", "rabbitmq", "--broker-uri", "amqp://guest:secret@127.0.0.1:1",
        "--dir", dir.resolve("r4").toString()).err())
        .contains("cannot reach the broker RabbitMQ at amqp://guest:***@127.0.0.1:1")
        .doesNotContain("secret");
  }
}
