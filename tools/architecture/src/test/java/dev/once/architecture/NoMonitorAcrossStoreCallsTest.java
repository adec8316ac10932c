package dev.once.architecture;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.architecture.monitorfixture.StoreUnderAMonitor;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * No {@code synchronized} method or block of core or a store holds its monitor across a store
 * call or blocking IO ({@link Monitors} says what counts). On JDK 21–23 a virtual thread that
 * blocks while it holds a monitor pins its carrier thread: with two carriers, two callers waiting
 * on the store under a monitor would stop every other virtual thread of the application. JDK 24+
 * no longer pins on {@code synchronized} (JEP 491), so a runtime check on a recent JDK would prove
 * nothing; this one reads the bytecode.
 *
 * <p>Every synchronized site of core and the stores is listed in {@link #SITES} with why it is
 * safe, so that a new one is looked at: the test fails on a site missing from the list and on an
 * entry that names no site any more.
 */
class NoMonitorAcrossStoreCallsTest {

  /** Modules checked: core (the engine, the API, the SPI) and every store. */
  private static final List<String> MODULES = List.of("core", "stores/jdbc", "stores/redis",
      "stores/dynamodb", "stores/near-cache");

  /** Every synchronized site of the modules checked, and why its monitor is never held long. */
  static final Map<String, String> SITES = new TreeMap<>(Map.of(
      "dev.once.internal.Leases#hold (1 synchronized block)",
      "starts the heartbeat if none runs: Scheduler.scheduleAtFixedRate only schedules the beat",
      "dev.once.internal.Leases#beat (1 synchronized block)",
      "ends the heartbeat when nothing is held: Task.cancel; the beat's extendAll runs before, "
          + "under a ReentrantLock (which never pins)",
      "dev.once.support.RepeatedFailureLog#log (1 synchronized block)",
      "updates one failure's counters; the log line is written after the block",
      "dev.once.redis.internal.RedisConnector#connect (2 synchronized blocks)",
      "the first starts an asynchronous connect (Lettuce connectAsync; the supplier must not "
          + "block) and keeps its future, the second compares a counter; the wait for the "
          + "connection (Future.get) is between them, outside both",
      "dev.once.redis.internal.RedisConnector#lambda$start (1 synchronized block)",
      "on Lettuce's thread when a connection opened: keeps it or not; it is closed after the block",
      "dev.once.redis.internal.RedisConnector#reopen (1 synchronized block)",
      "swaps the connection out; it is closed after the block",
      "dev.once.redis.internal.RedisConnector#close (1 synchronized block)",
      "marks the connector closed and takes the connection; it is closed after the block",
      "dev.once.redis.internal.SentinelSwitches#listen (synchronized method)",
      "subscribes asynchronously (connectPubSubAsync, subscribe): never waits",
      "dev.once.redis.internal.SentinelSwitches#lambda$listen (1 synchronized block)",
      "reads the closed flag; a connection opened after close is closed after the block",
      "dev.once.redis.internal.SentinelSwitches#close (synchronized method)",
      "closes the open subscriptions with closeAsync; joins only futures already done"));

  /** Blocking calls under a monitor that cannot block here, each with why. */
  static final Map<String, String> ALLOWED = Map.of(
      "dev.once.redis.internal.SentinelSwitches#close -> java.util.concurrent.CompletableFuture.join",
      "guarded by f.isDone() && !f.isCompletedExceptionally(): the join returns at once");

  private static Monitors checked;

  @BeforeAll
  static void read() throws IOException {
    List<Path> modules = ModuleBoundariesTest.compiledModules().stream()
        .filter(p -> MODULES.contains(module(p))).collect(Collectors.toList());
    assertThat(modules.stream().map(NoMonitorAcrossStoreCallsTest::module))
        .as("compiled modules (build the whole reactor first)")
        .containsExactlyInAnyOrderElementsOf(MODULES);
    checked = Monitors.read(modules);
  }

  private static String module(Path classes) {
    Path root = classes.getParent().getParent();
    Path parent = root.getParent();
    return parent.getFileName().toString().equals("stores")
        ? "stores/" + root.getFileName() : root.getFileName().toString();
  }

  @Test
  void noMonitorOfCoreOrAStoreIsHeldAcrossAStoreCallOrBlockingIo() {
    List<String> violations = checked.violations().stream()
        .filter(v -> !ALLOWED.containsKey(v.method() + " -> " + v.call()))
        .map(Monitors.Violation::toString).collect(Collectors.toList());
    assertThat(violations).as("monitors held across blocking calls (%d)", violations.size())
        .isEmpty();
    List<String> stale = ALLOWED.keySet().stream().filter(entry -> checked.violations().stream()
        .noneMatch(v -> entry.equals(v.method() + " -> " + v.call())))
        .collect(Collectors.toList());
    assertThat(stale).as("allowed calls that are no longer made under a monitor: remove them")
        .isEmpty();
  }

  @Test
  void everySynchronizedSiteIsListedWithWhyItIsSafe() {
    List<String> found = checked.sites().stream().map(NoMonitorAcrossStoreCallsTest::name)
        .sorted().collect(Collectors.toList());
    assertThat(found).as("synchronized sites of %s; a new one goes into SITES with its reason",
        MODULES).containsExactlyElementsOf(SITES.keySet());
  }

  /** A site's name without the numbers javac gives lambdas ({@code lambda$start$0}). */
  private static String name(Monitors.Site site) {
    return site.toString().replaceAll("(lambda\\$[A-Za-z0-9_]+)\\$\\d+", "$1");
  }

  /** The check must catch a monitor held across a store call and across JDBC. */
  @Test
  void theCheckCatchesAStoreCallUnderAMonitor() {
    Monitors fixture = Monitors.read(StoreUnderAMonitor.class);
    String fixtureName = StoreUnderAMonitor.class.getName();

    assertThat(fixture.violations()).extracting(Monitors.Violation::toString)
        .anySatisfy(v -> assertThat(v).startsWith(fixtureName + "#claimInASynchronizedMethod")
            .contains("dev.once.spi.IdempotencyStore.claim: a store call"))
        .anySatisfy(v -> assertThat(v).startsWith(fixtureName + "#claimThroughAHelper")
            .contains(fixtureName + ".helper → dev.once.spi.IdempotencyStore.claim: a store call"))
        .anySatisfy(v -> assertThat(v).startsWith(fixtureName + "#jdbcInABlock")
            .contains("javax.sql.DataSource.getConnection: JDBC"))
        .noneSatisfy(v -> assertThat(v).startsWith(fixtureName + "#claimAfterTheMonitor"));
    assertThat(fixture.sites()).extracting(NoMonitorAcrossStoreCallsTest::name).containsExactly(
        fixtureName + "#claimInASynchronizedMethod (synchronized method)",
        fixtureName + "#claimThroughAHelper (1 synchronized block)",
        fixtureName + "#jdbcInABlock (1 synchronized block)",
        fixtureName + "#claimAfterTheMonitor (1 synchronized block)");
  }
}
