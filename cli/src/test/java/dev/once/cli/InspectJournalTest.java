package dev.once.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.Codecs;
import dev.once.FailurePolicy;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.Once;
import dev.once.Step;
import dev.once.cli.demo.CommandRun;
import dev.once.jdbc.JdbcStore;
import dev.once.spi.Status;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code once inspect} on records whose work used durable steps (issue 24): the step journal
 * decoded, in text and JSON, and no live lease shown for a finished record.
 */
class InspectJournalTest {

  /** A terminal failure of the business. */
  static final class OutOfStock extends RuntimeException {
    OutOfStock(String message) {
      super(message);
    }
  }

  private static final String OUT_OF_STOCK = OutOfStock.class.getName();
  private static final String TEXT = Codecs.utf8().mediaType(); // text/plain;charset=utf-8

  @TempDir
  Path tmp;

  private String uri;

  /**
   * Two sagas on a SQLite file: o-1 completed (two steps, one compensable, and a checkpoint of
   * the user's); o-2 failed terminally in its third step, its charge refunded, the release of its
   * reservation failed once, so it is FAILED and compensating.
   */
  @BeforeEach
  void twoSagas() {
    Path file = tmp.resolve("once.db");
    uri = "sqlite:" + file;
    try (JdbcStore store = JdbcStore.sqlite(file)) {
      store.createSchema();
      AtomicInteger releaseFailures = new AtomicInteger(1);
      Step<String> reserve = Step.of("reserve", Codecs.utf8()).compensate((r, k) -> {
        if (releaseFailures.getAndDecrement() > 0) {
          throw new IllegalStateException("warehouse API down");
        }
      });
      Step<String> charge = Step.of("charge", Codecs.utf8()).compensate((r, k) -> { });
      Once once = Once.builder(store).steps(reserve, charge)
          .failurePolicy(FailurePolicy.retryAll().terminalOn(OutOfStock.class)).build();

      once.execute(IdempotencyKey.of("orders", "o-1"), Fingerprint.of("o-1"), Codecs.utf8(),
          a -> {
            String r = a.step(reserve, k -> "res-1");
            a.checkpoint("page", new byte[] {1, 2, 3});
            return r + "/" + a.step("ship", Codecs.utf8(), k -> "parcel-42");
          });
      assertThatThrownBy(() -> once.execute(IdempotencyKey.of("orders", "o-2"),
          Fingerprint.of("o-2"), Codecs.utf8(), a -> {
            a.step(reserve, k -> "res-2");
            a.step(charge, k -> "ch_2");
            return a.step("ship", Codecs.utf8(), k -> {
              throw new OutOfStock("warehouse empty");
            });
          })).isInstanceOf(OutOfStock.class);
      assertThat(store.find(IdempotencyKey.of("orders", "o-2")).orElseThrow().status())
          .isEqualTo(Status.FAILED);
    }
  }

  @Test
  void showsTheStepsOfACompletedSagaAndNoLiveLease() {
    CommandRun run = CommandRun.run("inspect", "--store", uri, "--scope", "orders", "o-1");

    assertThat(run.exitCode()).as(run.err()).isZero();
    assertThat(run.out()).contains(
        "  status       COMPLETED\n",
        "  lease        none (completed)\n",
        "  checkpoint   once:journal (",
        "bytes), the step journal: 2 steps\n"
            + "     1. reserve  done         compensable  " + TEXT + ", 5 bytes\n"
            + "     2. ship     done         -            " + TEXT + ", 9 bytes\n"
            + "    user checkpoint: page (3 bytes)\n"
            + "  outcome      SUCCESS, ",
        "  body         res-1/parcel-42\n")
        .doesNotContain("lease until", "held", "committed failure", "compensation attempts");
  }

  @Test
  void showsTheCompensatedStepTheCommittedFailureAndTheFailedAttempts() {
    CommandRun run = CommandRun.run("inspect", "--store", uri, "--scope", "orders", "o-2");

    assertThat(run.exitCode()).as(run.err()).isZero();
    assertThat(run.out()).contains(
        "  status       FAILED\n",
        "  lease        none (failed: the next claim takes over)\n",
        "bytes), the step journal: 3 steps\n"
            + "     1. reserve  done         compensable  " + TEXT + ", 5 bytes\n"
            + "     2. charge   compensated  compensable  " + TEXT + ", 4 bytes\n"
            + "     3. ship     failed       -            " + OUT_OF_STOCK + ": warehouse empty\n"
            + "    committed failure: " + OUT_OF_STOCK + ": warehouse empty\n"
            + "    failed compensation attempts: 1\n"
            + "  outcome      none\n",
        "  last error   compensation failed: warehouse API down")
        .doesNotContain("user checkpoint");
  }

  @Test
  void printsTheJournalAsJson() {
    CommandRun run = CommandRun.run("inspect", "--json", "--store", uri, "--scope", "orders",
        "o-1", "o-2");

    assertThat(run.exitCode()).as(run.err()).isZero();
    String[] lines = run.out().strip().split("\n");
    assertThat(lines).hasSize(2);
    assertThat(lines[0]).contains("\"status\":\"COMPLETED\"", "\"leaseUntil\":null",
        "\"leaseHeld\":false", "\"checkpoint\":\"once:journal\"",
        "\"journal\":{\"steps\":["
            + "{\"name\":\"reserve\",\"state\":\"DONE\",\"compensable\":true,"
            + "\"mediaType\":\"" + TEXT + "\",\"bytes\":5,\"detail\":null},"
            + "{\"name\":\"ship\",\"state\":\"DONE\",\"compensable\":false,"
            + "\"mediaType\":\"" + TEXT + "\",\"bytes\":9,\"detail\":null}],"
            + "\"failureType\":null,\"failureMessage\":null,\"compensationFailures\":0,"
            + "\"userCheckpoint\":\"page\",\"userCheckpointBytes\":3}");
    assertThat(lines[1]).contains("\"status\":\"FAILED\"", "\"leaseUntil\":null",
        "\"journal\":{\"steps\":["
            + "{\"name\":\"reserve\",\"state\":\"DONE\",\"compensable\":true,"
            + "\"mediaType\":\"" + TEXT + "\",\"bytes\":5,\"detail\":null},"
            + "{\"name\":\"charge\",\"state\":\"COMPENSATED\",\"compensable\":true,"
            + "\"mediaType\":\"" + TEXT + "\",\"bytes\":4,\"detail\":null},"
            + "{\"name\":\"ship\",\"state\":\"FAILED\",\"compensable\":false,"
            + "\"mediaType\":null,\"bytes\":null,"
            + "\"detail\":\"" + OUT_OF_STOCK + ": warehouse empty\"}],"
            + "\"failureType\":\"" + OUT_OF_STOCK + "\",\"failureMessage\":\"warehouse empty\","
            + "\"compensationFailures\":1,\"userCheckpoint\":null,\"userCheckpointBytes\":null}");
  }

  @Test
  void aRecordWithoutStepsHasNoJournalAndAHeldLeaseIsStillShown() {
    try (JdbcStore store = JdbcStore.sqlite(tmp.resolve("once.db"))) {
      Once.builder(store).build().execute(IdempotencyKey.of("orders", "o-3"),
          Fingerprint.of("o-3"), Codecs.utf8(), a -> {
            a.checkpoint("page", new byte[] {7});
            CommandRun during = CommandRun.run("inspect", "--store", uri, "--scope", "orders",
                "o-3");
            assertThat(during.out()).as(during.err()).contains("  status       IN_PROGRESS\n",
                ", held)\n", "  checkpoint   page (1 byte)\n  outcome      none\n");
            return "ok";
          });
    }

    CommandRun json = CommandRun.run("inspect", "--json", "--store", uri, "--scope", "orders",
        "o-3");
    assertThat(json.out()).contains("\"checkpoint\":\"page\"", "\"journal\":null");
  }
}
