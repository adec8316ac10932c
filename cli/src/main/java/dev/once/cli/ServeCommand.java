package dev.once.cli;

import dev.once.Once;
import dev.once.StoreUnavailableException;
import dev.once.cli.store.StoreOption;
import dev.once.cli.store.StoreUris.OpenStore;
import dev.once.cli.store.StoreUris.StoreUri;
import dev.once.cli.store.StoreUris;
import dev.once.cli.support.CommandFailure;
import dev.once.servlet.IdempotencyFilter;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.stream.Stream;
import org.apache.catalina.Context;
import org.apache.catalina.LifecycleException;
import org.apache.catalina.connector.Connector;
import org.apache.catalina.startup.Tomcat;
import org.apache.tomcat.util.descriptor.web.FilterDef;
import org.apache.tomcat.util.descriptor.web.FilterMap;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code once serve}: a small payments HTTP API ({@link PaymentsApi}) behind the
 * {@link IdempotencyFilter}, on embedded Tomcat, so that {@code curl} with the same
 * {@code Idempotency-Key} twice shows the replay. Runs until interrupted (Ctrl-C).
 */
@Command(name = "serve", mixinStandardHelpOptions = true, version = "0.1.0-SNAPSHOT",
    sortOptions = false, showDefaultValues = true,
    header = "Serves a small payments API protected by the Idempotency-Key filter.",
    description = {
        "POST /charges debits a wallet; retry it with the same Idempotency-Key header and the "
            + "response is replayed (Idempotent-Replayed: true) instead of a second debit.",
        "Runs until interrupted (Ctrl-C). Exit code 2 for bad options, a store that cannot be "
            + "used or a port that is taken."})
final class ServeCommand implements Callable<Integer> {

  @Spec
  CommandSpec spec;

  @Mixin
  StoreOption store;

  @Option(names = "--port", defaultValue = "8080", paramLabel = "PORT",
      description = "TCP port (0 picks a free one).")
  int port;

  @Option(names = "--host", defaultValue = "127.0.0.1", paramLabel = "ADDRESS",
      description = "Address to listen on; 0.0.0.0 for every interface.")
  String host;

  private final CountDownLatch stop = new CountDownLatch(1);
  private volatile int boundPort = -1;
  private volatile PaymentsApi api;

  @Override
  public Integer call() throws InterruptedException {
    if (port < 0 || port > 65535) {
      throw new ParameterException(spec.commandLine(), "--port must be between 0 and 65535, was "
          + port);
    }
    StoreUri uri = store.uri();
    PrintWriter out = spec.commandLine().getOut();
    try (OpenStore opened = store.open(16)) {
      try {
        opened.createSchema();
      } catch (StoreUnavailableException e) {
        throw new CommandFailure(CommandFailure.CANNOT_RUN,
            StoreUris.cannotOpenMessage(uri, StoreUris.causeMessage(e)));
      }
      Once once = Once.builder(opened.store()).build();
      PaymentsApi payments = new PaymentsApi();
      Path baseDir = tempDir();
      Tomcat tomcat = tomcat(baseDir, IdempotencyFilter.builder(once).paths("/charges").build(),
          payments);
      try {
        try {
          tomcat.start();
        } catch (LifecycleException e) {
          throw new CommandFailure(CommandFailure.CANNOT_RUN, "cannot listen on " + host + ":"
              + port + ": " + StoreUris.causeMessage(e));
        }
        int local = tomcat.getConnector().getLocalPort();
        if (local <= 0) {
          throw new CommandFailure(CommandFailure.CANNOT_RUN, "cannot listen on " + host + ":"
              + port + " (in use, or not an address of this machine)");
        }
        api = payments;
        boundPort = local;
        String base = "http://" + (host.contains(":") ? "[" + host + "]" : host) + ":" + local;
        out.printf(Locale.ROOT, "Payments API on %s (records: %s)%n%n", base, opened.describe());
        out.printf(Locale.ROOT, "Try it twice; the second answer is replayed:%n"
            + "  curl -i -X POST %s/charges -H 'Idempotency-Key: order-1' "
            + "-H 'Content-Type: application/json' -d '{\"customer\":\"cus_1\",\"amount\":1250}'%n"
            + "Then the same key with another body (422), and no key at all (400).%n"
            + "Balance: curl %s/wallets/cus_1%n%nCtrl-C stops.%n", base, base);
        out.flush();
        Thread hook = new Thread(stop::countDown, "once-serve-stop");
        Runtime.getRuntime().addShutdownHook(hook);
        try {
          stop.await();
        } finally {
          try {
            Runtime.getRuntime().removeShutdownHook(hook);
          } catch (IllegalStateException shuttingDown) {
            // the hook is what woke us
          }
        }
        return 0;
      } finally {
        boundPort = -1;
        try {
          tomcat.stop();
          tomcat.destroy();
        } catch (LifecycleException e) {
          // stopping anyway
        }
        deleteQuietly(baseDir);
      }
    }
  }

  /** The port once listening, else -1; for tests. */
  int boundPort() {
    return boundPort;
  }

  /** The API being served, for tests; null before. */
  PaymentsApi api() {
    return api;
  }

  /** Makes {@link #call()} return. */
  void stop() {
    stop.countDown();
  }

  private Tomcat tomcat(Path baseDir, IdempotencyFilter filter, PaymentsApi payments) {
    // Tomcat logs its start-up at INFO through java.util.logging; the command prints its own.
    Logger.getLogger("org.apache").setLevel(Level.WARNING);
    Tomcat tomcat = new Tomcat();
    tomcat.setBaseDir(baseDir.toString());
    Connector connector = new Connector();
    connector.setPort(port);
    connector.setProperty("address", host);
    // Fail at start when the port is taken, instead of logging and serving nothing.
    connector.setThrowOnFailure(true);
    tomcat.setConnector(connector);
    Context context = tomcat.addContext("", null);
    Tomcat.addServlet(context, "payments", payments);
    context.addServletMappingDecoded("/", "payments");
    FilterDef def = new FilterDef();
    def.setFilterName("idempotency");
    def.setFilter(filter);
    context.addFilterDef(def);
    FilterMap map = new FilterMap();
    map.setFilterName("idempotency");
    map.addURLPattern("/*");
    context.addFilterMap(map);
    return tomcat;
  }

  private static Path tempDir() {
    try {
      return Files.createTempDirectory("once-serve");
    } catch (IOException e) {
      throw new CommandFailure(CommandFailure.CANNOT_RUN, "cannot create a temporary directory: "
          + e.getMessage());
    }
  }

  private static void deleteQuietly(Path dir) {
    try (Stream<Path> paths = Files.walk(dir)) {
      paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException e) {
      // a leftover temporary directory is harmless
    }
  }
}
