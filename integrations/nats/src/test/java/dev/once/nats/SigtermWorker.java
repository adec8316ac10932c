package dev.once.nats;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.once.Once;
import dev.once.jdbc.JdbcDialect;
import dev.once.jdbc.JdbcStore;
import dev.once.testkit.EffectsFile;
import io.nats.client.Connection;
import io.nats.client.Nats;
import io.nats.client.Options;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/**
 * A consumer process as a service runs one: a fetch loop, and a JVM shutdown hook that stops it
 * (what a SIGTERM in a rolling deploy runs). Each handled message appends its payload to the
 * effects file. When it handles the message whose payload is its last argument it prints
 * {@code HALF} and waits for the shutdown to begin, so the SIGTERM arrives with the batch half
 * done.
 *
 * <p>Arguments: NATS URL, stream, durable consumer, JDBC URL (PostgreSQL, with user and password),
 * store table, effects file, payload to halt at.
 */
public final class SigtermWorker {

  private SigtermWorker() {}

  public static void main(String[] args) throws Exception {
    String url = args[0];
    String stream = args[1];
    String durable = args[2];
    HikariConfig config = new HikariConfig();
    config.setPoolName("sigterm-worker");
    config.setMaximumPoolSize(2);
    config.setJdbcUrl(args[3]);
    HikariDataSource dataSource = new HikariDataSource(config);
    JdbcStore store = JdbcStore.builder(dataSource).dialect(JdbcDialect.POSTGRESQL).table(args[4])
        .build();
    Path effects = Path.of(args[5]);
    String haltAt = args[6];
    CountDownLatch terminating = new CountDownLatch(1);
    Connection connection = Nats.connect(Options.builder().server(url)
        .connectionTimeout(Duration.ofSeconds(5)).build());
    IdempotentNatsConsumer consumer = IdempotentNatsConsumer.builder(
        Once.builder(store).build(), (message, attempt) -> {
          String payload = new String(message.getData(), StandardCharsets.UTF_8);
          EffectsFile.append(effects, payload);
          if (payload.equals(haltAt)) {
            System.out.println("HALF");
            System.out.flush();
            terminating.await(30, TimeUnit.SECONDS);
          }
        })
        .connection(connection)
        .stream(stream)
        .consumer(durable)
        .batchSize(100) // the test publishes all 20 before this process starts: one fetch
        .build();
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      // close() waits for the loop: the message being handled finishes, the rest of its batch is
      // nak'd, the final ones are acked and flushed. Its first step sets the stop flag, then it
      // waits (TIMED_WAITING); the handler in hand returns only after that, as when a SIGTERM
      // lands in the middle of a handler. (Counting down first would let the batch run on into
      // the next message before the stop is asked.)
      Thread closing = new Thread(consumer::close, "closing");
      closing.start();
      awaitTrue(() -> closing.getState() == Thread.State.TIMED_WAITING || !closing.isAlive());
      terminating.countDown();
      try {
        closing.join();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      try {
        connection.close();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      dataSource.close();
    }));
    System.out.println("STARTED");
    System.out.flush();
    consumer.run();
  }

  /** Waits until {@code condition} holds, at most 10 s (then goes on: the test will tell). */
  private static void awaitTrue(BooleanSupplier condition) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!condition.getAsBoolean() && System.nanoTime() < deadline) {
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1)); // polling, hook-side
    }
  }
}
