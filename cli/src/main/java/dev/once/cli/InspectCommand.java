package dev.once.cli;

import dev.once.Checkpoint;
import dev.once.IdempotencyKey;
import dev.once.InvalidKeyException;
import dev.once.StoreUnavailableException;
import dev.once.cli.store.StoreOption;
import dev.once.cli.store.StoreUris.OpenStore;
import dev.once.cli.store.StoreUris;
import dev.once.cli.support.CommandFailure;
import dev.once.cli.support.Json;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.Outcome;
import dev.once.spi.Status;
import dev.once.spi.StepJournal;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code once inspect KEY…}: shows the records of keys of one scope and tenant, for people or, with
 * {@code --json}, for scripts. Exit 0 when every key has a record, 1 when one has none (as grep
 * does), 2 for bad input or a store that cannot be used.
 */
@Command(name = "inspect", mixinStandardHelpOptions = true, version = "0.1.0-SNAPSHOT",
    sortOptions = false, showDefaultValues = true,
    header = "Shows the records of idempotency keys.",
    description = {
        "Prints status, fencing token, lease, attempts, checkpoint, outcome and expiry of each "
            + "key's record in scope --scope and tenant --tenant; for work with durable steps, "
            + "the step journal: each step's state and result, the failure being compensated, "
            + "failed compensation attempts and the user's own checkpoint.",
        "Exit code 0 when every key has a record; 1 when one has none (or only an expired one); "
            + "2 for bad options or a store that cannot be used."})
final class InspectCommand implements Callable<Integer> {

  /** How much of a text outcome or error is shown before it is cut. */
  static final int PREVIEW_CHARS = 120;

  @Spec
  CommandSpec spec;

  @Mixin
  StoreOption store;

  @Option(names = "--scope", required = true, paramLabel = "SCOPE",
      description = "The operation or consumer the keys belong to, e.g. payments.charge.")
  String scope;

  @Option(names = "--tenant", defaultValue = "", paramLabel = "TENANT",
      description = "The caller the keys belong to; empty when single-tenant.")
  String tenant;

  @Option(names = "--json", description = "One JSON object per line, for scripts.")
  boolean json;

  @Parameters(arity = "1..*", paramLabel = "KEY", description = "The keys to show.")
  List<String> keys;

  Clock clock = Clock.systemUTC();

  @Override
  public Integer call() {
    List<IdempotencyKey> parsed = new ArrayList<>(keys.size());
    for (String key : keys) {
      try {
        parsed.add(IdempotencyKey.of(scope, tenant, key));
      } catch (InvalidKeyException | IllegalArgumentException e) {
        throw new ParameterException(spec.commandLine(), e.getMessage());
      }
    }
    PrintWriter out = spec.commandLine().getOut();
    int missing = 0;
    try (OpenStore opened = store.openExisting(1)) {
      Instant now = clock.instant();
      for (IdempotencyKey key : parsed) {
        Optional<IdempotencyRecord> found;
        try {
          found = opened.store().find(key);
        } catch (StoreUnavailableException e) {
          throw new CommandFailure(CommandFailure.CANNOT_RUN, "the store at "
              + opened.uri().display() + " failed: " + StoreUris.causeMessage(e));
        }
        // An expired record is gone as far as claims are concerned: the key behaves as new.
        Optional<IdempotencyRecord> live = found.filter(r -> !r.isExpired(now));
        if (live.isEmpty()) {
          missing++;
        }
        if (json) {
          out.println(toJson(key, live, now));
        } else {
          print(out, key, live, found.isPresent(), now);
        }
      }
    }
    out.flush();
    return missing == 0 ? 0 : 1;
  }

  private static void print(PrintWriter out, IdempotencyKey key,
      Optional<IdempotencyRecord> live, boolean expiredFound, Instant now) {
    out.printf(Locale.ROOT, "%s%n", describe(key));
    if (live.isEmpty()) {
      out.printf(Locale.ROOT, "  %s%n%n", expiredFound
          ? "no record (an expired one awaits purging: the key behaves as new)"
          : "no record (the key behaves as new)");
      return;
    }
    IdempotencyRecord r = live.get();
    row(out, "status", r.status().name());
    row(out, "token", Long.toString(r.token()));
    row(out, "attempts", Integer.toString(r.attempts()));
    row(out, "lease", lease(r, now));
    checkpoint(out, r);
    Outcome outcome = r.outcome();
    row(out, "outcome", outcome == null ? "none" : outcome.kind() + ", " + outcome.mediaType()
        + ", " + bytes(outcome.size()));
    if (outcome != null && outcome.kind() == Outcome.Kind.FAILURE) {
      row(out, "failure", outcome.failureType() + ": " + preview(outcome.failureMessage()));
    } else if (outcome != null && isText(outcome.mediaType())) {
      row(out, "body", preview(new String(outcome.body(), StandardCharsets.UTF_8)));
    }
    if (r.lastError() != null) {
      row(out, "last error", preview(r.lastError()));
    }
    row(out, "fingerprint", r.fingerprint().hex());
    row(out, "created", r.createdAt().toString());
    row(out, "updated", r.updatedAt().toString());
    row(out, "expires", r.expiresAt() + " (" + relative(r.expiresAt(), now) + ")");
    out.println();
  }

  private static String describe(IdempotencyKey key) {
    return "scope " + key.scope() + ", tenant " + (key.tenant().isEmpty() ? "(none)"
        : key.tenant()) + ", key " + key.key();
  }

  private static void row(PrintWriter out, String label, String value) {
    out.printf(Locale.ROOT, "  %-12s %s%n", label, value);
  }

  private static String toJson(IdempotencyKey key, Optional<IdempotencyRecord> live,
      Instant now) {
    Json.Obj obj = Json.obj().put("scope", key.scope()).put("tenant", key.tenant())
        .put("key", key.key()).put("found", live.isPresent());
    live.ifPresent(r -> {
      Outcome outcome = r.outcome();
      obj.put("status", r.status().name())
          .put("token", r.token())
          .put("attempts", r.attempts())
          .put("leaseUntil", r.status() == Status.IN_PROGRESS ? r.leaseUntil().toString() : null)
          .put("leaseHeld", r.isLeaseLive(now))
          .put("checkpoint", r.checkpoint() == null ? null : r.checkpoint().name())
          .put("checkpointBytes", r.checkpoint() == null ? null : r.checkpoint().size())
          .put("journal", StepJournal.read(r.checkpoint()).map(InspectCommand::journalJson)
              .orElse(null))
          .put("outcomeKind", outcome == null ? null : outcome.kind().name())
          .put("outcomeMediaType", outcome == null ? null : outcome.mediaType())
          .put("outcomeBytes", outcome == null ? null : outcome.size())
          .put("lastError", r.lastError())
          .put("fingerprint", r.fingerprint().hex())
          .put("createdAt", r.createdAt().toString())
          .put("updatedAt", r.updatedAt().toString())
          .put("expiresAt", r.expiresAt().toString());
    });
    return obj.toString();
  }

  /**
   * The lease of an IN_PROGRESS record (held, or passed); a finished or failed record has none,
   * whatever instant its row still carries.
   */
  private static String lease(IdempotencyRecord r, Instant now) {
    return switch (r.status()) {
      case COMPLETED -> "none (completed)";
      case FAILED -> "none (failed: the next claim takes over)";
      default -> "until " + r.leaseUntil() + " (" + relative(r.leaseUntil(), now)
          + (r.isLeaseLive(now) ? ", held" : ", passed: the next claim takes over") + ")";
    };
  }

  /** The checkpoint row and, when it holds a step journal, the journal under it. */
  private static void checkpoint(PrintWriter out, IdempotencyRecord r) {
    if (r.checkpoint() == null) {
      row(out, "checkpoint", "none");
      return;
    }
    String stored = r.checkpoint().name() + " (" + bytes(r.checkpoint().size()) + ")";
    if (!r.checkpoint().name().equals(StepJournal.CHECKPOINT_NAME)) {
      row(out, "checkpoint", stored);
      return;
    }
    Optional<StepJournal> read = StepJournal.read(r.checkpoint());
    if (read.isEmpty()) {
      row(out, "checkpoint", stored + ", a step journal this version cannot read");
      return;
    }
    StepJournal journal = read.get();
    int count = journal.steps().size();
    row(out, "checkpoint", stored + ", the step journal: " + count
        + (count == 1 ? " step" : " steps"));
    int nameWidth = journal.steps().stream().mapToInt(e -> e.name().length()).max().orElse(0);
    int number = 0;
    for (StepJournal.Entry e : journal.steps()) {
      String line = String.format(Locale.ROOT, "    %2d. %-" + nameWidth + "s  %-11s  %-11s  %s",
          ++number, e.name(), state(e.state()), e.compensable() ? "compensable" : "-",
          stepResult(e));
      out.println(line.stripTrailing());
    }
    journal.failure().ifPresent(f -> out.printf(Locale.ROOT,
        "    committed failure: %s%n", preview(failure(f))));
    if (journal.failure().isPresent() || journal.compensationFailures() > 0) {
      out.printf(Locale.ROOT, "    failed compensation attempts: %d%n",
          journal.compensationFailures());
    }
    journal.userCheckpoint().ifPresent(c -> out.printf(Locale.ROOT,
        "    user checkpoint: %s (%s)%n", c.name(), bytes(c.size())));
  }

  /** "not stored" for NOT_STORED. */
  private static String state(StepJournal.State state) {
    return state.name().toLowerCase(Locale.ROOT).replace('_', ' ');
  }

  private static String stepResult(StepJournal.Entry e) {
    return switch (e.state()) {
      case DONE, COMPENSATED -> e.mediaType() + ", " + bytes(e.size());
      case STARTED -> "its effect may exist: the next attempt asks its reconciler";
      case NOT_STORED -> "result not stored: " + preview(e.detail());
      case FAILED -> preview(e.detail());
    };
  }

  private static String failure(Outcome failure) {
    String message = failure.failureMessage();
    return message.isEmpty() ? failure.failureType() : failure.failureType() + ": " + message;
  }

  private static Json.Obj journalJson(StepJournal journal) {
    List<Json.Obj> steps = new ArrayList<>();
    for (StepJournal.Entry e : journal.steps()) {
      steps.add(Json.obj().put("name", e.name()).put("state", e.state().name())
          .put("compensable", e.compensable())
          .put("mediaType", e.mediaType().isEmpty() ? null : e.mediaType())
          .put("bytes", e.state() == StepJournal.State.DONE
              || e.state() == StepJournal.State.COMPENSATED ? e.size() : null)
          .put("detail", e.detail().isEmpty() ? null : e.detail()));
    }
    Optional<Outcome> failure = journal.failure();
    Optional<Checkpoint> user = journal.userCheckpoint();
    return Json.obj().put("steps", steps)
        .put("failureType", failure.map(Outcome::failureType).orElse(null))
        .put("failureMessage", failure.map(Outcome::failureMessage).orElse(null))
        .put("compensationFailures", journal.compensationFailures())
        .put("userCheckpoint", user.map(Checkpoint::name).orElse(null))
        .put("userCheckpointBytes", user.map(Checkpoint::size).orElse(null));
  }

  private static boolean isText(String mediaType) {
    String type = mediaType.toLowerCase(Locale.ROOT);
    return type.startsWith("text/") || type.contains("json") || type.contains("xml");
  }

  private static String preview(String text) {
    String line = text.replaceAll("\\s*\\R\\s*", " ");
    return line.length() <= PREVIEW_CHARS ? line : line.substring(0, PREVIEW_CHARS) + "...";
  }

  static String bytes(long n) {
    return n == 1 ? "1 byte" : n + " bytes";
  }

  /** "in 23 h 59 min" or "4 s ago", to the largest two units. */
  static String relative(Instant at, Instant now) {
    Duration d = Duration.between(now, at);
    boolean past = d.isNegative();
    d = d.abs();
    String text;
    if (d.toDays() > 0) {
      text = d.toDays() + " d " + d.toHoursPart() + " h";
    } else if (d.toHours() > 0) {
      text = d.toHours() + " h " + d.toMinutesPart() + " min";
    } else if (d.toMinutes() > 0) {
      text = d.toMinutes() + " min " + d.toSecondsPart() + " s";
    } else if (d.getSeconds() > 0) {
      text = d.getSeconds() + " s";
    } else {
      text = d.toMillis() + " ms";
    }
    return past ? text + " ago" : "in " + text;
  }
}
