package dev.once.rabbitmq;

import com.rabbitmq.client.Connection;
import dev.once.Once;
import dev.once.redis.RedisStore;
import dev.once.testkit.EffectsFile;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/**
 * A consumer process as a service runs one: a subscription on its own connection, and a JVM
 * shutdown hook that stops it (what a SIGTERM in a rolling deploy runs). Each handled message
 * appends its body to the effects file. When it handles the message whose body is its last
 * argument it prints {@code HALF} and waits for the shutdown to begin, so the SIGTERM arrives with
 * the batch half done.
 *
 * <p>Arguments: queue, dead-letter exchange, Redis URI, effects file, body to halt at. The broker
 * is {@link Rabbit}'s (the same environment as the test).
 */
public final class SigtermWorker {

  private SigtermWorker() {}

  public static void main(String[] args) throws Exception {
    String queue = args[0];
    String deadLetterExchange = args[1];
    RedisStore store = RedisStore.builder(args[2]).build();
    Path effects = Path.of(args[3]);
    String haltAt = args[4];
    CountDownLatch terminating = new CountDownLatch(1);
    Connection connection = Rabbit.connect();
    Subscription subscription = IdempotentRabbitConsumer.builder(
        Once.builder(store).build(), (delivery, attempt) -> {
          String body = new String(delivery.getBody(), StandardCharsets.UTF_8);
          EffectsFile.append(effects, body);
          if (body.equals(haltAt)) {
            System.out.println("HALF");
            System.out.flush();
            terminating.await(30, TimeUnit.SECONDS);
          }
        })
        .queue(queue)
        .deadLetterExchange(deadLetterExchange)
        .prefetch(100)
        // The test publishes all 20 messages before this process starts: they arrive in one burst
        // and the linger gathers them into one batch.
        .linger(Duration.ofMillis(500))
        .build()
        .start(connection);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      // close() waits for the worker: the message being handled finishes, the rest is released,
      // what is final is acknowledged and the channel closed (the broker requeues the rest). Its
      // first step asks the worker to stop (isRunning() turns false); the handler in hand returns
      // only after that, as when a SIGTERM lands in the middle of a handler. (Counting down first
      // would let the batch run on into the next message before the stop is asked.)
      Thread closing = new Thread(subscription::close, "closing");
      closing.start();
      awaitTrue(() -> !subscription.isRunning());
      terminating.countDown();
      try {
        closing.join();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      try {
        connection.close();
      } catch (IOException | RuntimeException e) {
        // exiting anyway
      }
      store.close();
    }));
    System.out.println("STARTED");
    System.out.flush();
    new CountDownLatch(1).await(); // the subscription runs on its own thread until the SIGTERM
  }

  /** Waits until {@code condition} holds, at most 10 s (then goes on: the test will tell). */
  private static void awaitTrue(BooleanSupplier condition) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!condition.getAsBoolean() && System.nanoTime() < deadline) {
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1)); // polling, hook-side
    }
  }
}
