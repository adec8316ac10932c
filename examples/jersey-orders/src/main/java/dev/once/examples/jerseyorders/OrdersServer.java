package dev.once.examples.jerseyorders;

import dev.once.InProgressPolicy;
import dev.once.Once;
import dev.once.OnceListener;
import dev.once.jaxrs.IdempotencyFeature;
import dev.once.jdbc.JdbcDialect;
import dev.once.jdbc.JdbcStore;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.SQLException;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import javax.sql.DataSource;
import org.glassfish.grizzly.http.server.HttpServer;
import org.glassfish.hk2.utilities.binding.AbstractBinder;
import org.glassfish.jersey.grizzly2.httpserver.GrizzlyHttpServerFactory;
import org.glassfish.jersey.server.ResourceConfig;
import org.glassfish.jersey.server.ServerProperties;

/**
 * The orders API: Jersey on Grizzly, {@code POST /orders} protected by Once's
 * {@link IdempotencyFeature} over a {@link JdbcStore} in a SQLite file, which holds the orders
 * too. {@link #main} runs it; {@link #start} starts one that {@link #close} stops (the tests).
 */
public final class OrdersServer implements AutoCloseable {

  private final HttpServer server;
  private final Once once;
  private final Orders orders;
  private final Warehouse warehouse;

  private OrdersServer(HttpServer server, Once once, Orders orders, Warehouse warehouse) {
    this.server = server;
    this.once = once;
    this.orders = orders;
    this.warehouse = warehouse;
  }

  /**
   * {@code java -jar once-example-jersey-orders.jar [port] [database file]}: port 8080 and
   * {@code ./once-data/jersey-orders.db} by default. Stops on Ctrl-C.
   */
  public static void main(String[] args) throws Exception {
    int port = args.length > 0 ? Integer.parseInt(args[0]) : 8080;
    Path database = Path.of(args.length > 1 ? args[1] : "once-data/jersey-orders.db");
    OrdersServer server = start(port, database);
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      server.close();
      stopped.countDown();
    }));
    System.out.println("Orders API on http://127.0.0.1:" + server.port() + "/orders, records in "
        + database.toAbsolutePath() + " (Ctrl-C stops it)");
    stopped.await();
  }

  /** Starts the API on 127.0.0.1 and {@code port} (0: any free port), its data in {@code database}. */
  public static OrdersServer start(int port, Path database) throws IOException, SQLException {
    return start(port, database, new OnceListener() {});
  }

  /** As {@link #start(int, Path)}, telling {@code listener} what Once does (metrics, tests). */
  public static OrdersServer start(int port, Path database, OnceListener listener)
      throws IOException, SQLException {
    Path parent = database.toAbsolutePath().getParent();
    if (parent != null) {
      Files.createDirectories(parent);
    }
    // One SQLite file for the records and the orders. sqliteDataSource sets what the store needs
    // of SQLite: WAL, a busy timeout, synchronous=FULL.
    DataSource dataSource = JdbcStore.sqliteDataSource(database);
    JdbcStore store = JdbcStore.builder(dataSource).dialect(JdbcDialect.SQLITE).build();
    store.createSchema();                               // CREATE TABLE IF NOT EXISTS once_records
    Orders orders = new Orders(dataSource);
    orders.createSchema();

    Once once = Once.builder(store)
        .lease(Duration.ofSeconds(30))
        // A duplicate arriving while the original runs waits for it, then gets its replay
        // (instead of an immediate 409 with Retry-After).
        .onInProgress(InProgressPolicy.waitUpTo(Duration.ofSeconds(5)))
        .listener(listener)
        .build();
    IdempotencyFeature idempotency = IdempotencyFeature.builder(once)
        .paths("/orders")                               // POST and PATCH by default
        .build();
    Warehouse warehouse = new Warehouse();
    ResourceConfig config = new ResourceConfig()
        .register(idempotency)
        .register(new JsonBodies())
        .register(OrdersResource.class)
        // The resource's services. (A resource registered as an instance works too, but
        // Jersey then logs a spurious "will be ignored" warning: eclipse-ee4j/jersey#3700.)
        .register(new AbstractBinder() {
          @Override
          protected void configure() {
            bind(orders).to(Orders.class);
            bind(warehouse).to(Warehouse.class);
          }
        })
        .property(ServerProperties.WADL_FEATURE_DISABLE, true);   // no JAXB here for WADL

    HttpServer server = GrizzlyHttpServerFactory.createHttpServer(
        URI.create("http://127.0.0.1:" + port + "/"), config, true);
    return new OrdersServer(server, once, orders, warehouse);
  }

  /** The port it listens on. */
  public int port() {
    return server.getListener("grizzly").getPort();
  }

  public Once once() {
    return once;
  }

  public Orders orders() {
    return orders;
  }

  public Warehouse warehouse() {
    return warehouse;
  }

  /** Stops the server. */
  @Override
  public void close() {
    server.shutdownNow();
  }
}
