package dev.once.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.IdempotencyKey;
import dev.once.InvalidKeyException;
import dev.once.KeyReusedException;
import dev.once.ReplayedFailureException;
import dev.once.spi.IdempotencyStore;
import dev.once.spi.Status;
import dev.once.spring.autoconfigure.OnceAutoConfiguration;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * {@link Idempotent} bean methods in lease mode (no transaction to join), on a real SQLite store:
 * keys, tenants, scopes and fingerprints from SpEL, JSON-stored generic return values, failures,
 * racing threads, and mistakes caught at startup.
 */
class IdempotentLeaseModeTest {

  record Line(String sku, int quantity) {}

  record Order(String id, String sku, int quantity) {}

  /** A bean with every shape of @Idempotent method the tests call. */
  public static class Orders {
    private final AtomicInteger runs = new AtomicInteger();
    private final AtomicInteger flakyRuns = new AtomicInteger();

    public int flakyRuns() {
      return flakyRuns.get();
    }

    /** How often a method body ran (a method: the proxy's fields are not the target's). */
    public int runs() {
      return runs.get();
    }

    @Idempotent(key = "#order.id")
    public List<Line> place(Order order) {
      runs.incrementAndGet();
      return List.of(new Line(order.sku(), order.quantity()));
    }

    @Idempotent(key = "#id", tenant = "#customer")
    public String pay(String customer, String id, long amount) {
      return customer + ":" + id + ":" + amount + ":" + runs.incrementAndGet();
    }

    @Idempotent(key = "#id", scope = "orders.cancel", terminalOn = IllegalStateException.class)
    public void cancel(String id, boolean shipped) {
      runs.incrementAndGet();
      if (shipped) {
        throw new IllegalStateException("already shipped");
      }
    }

    @Idempotent(key = "#a0")
    public Optional<String> lookup(String id, boolean present) {
      runs.incrementAndGet();
      return present ? Optional.of("found " + id) : Optional.empty();
    }

    @Idempotent(key = "#id")
    public String flaky(String id) throws IOException {
      if (flakyRuns.incrementAndGet() == 1) {
        throw new IOException("connection reset");
      }
      return "ok " + id;
    }

    /** Shaped like a @KafkaListener method: payload plus headers. */
    @Idempotent(key = "#headers['idempotency-key']", fingerprint = "#payload",
        scope = "orders-consumer")
    public int onMessage(String payload, Map<String, Object> headers) {
      return runs.incrementAndGet();
    }

    @Idempotent(key = "#id")
    public int race(String id) {
      return runs.incrementAndGet();
    }
  }

  public static class BadExpression {
    @Idempotent(key = "#order.")
    public String call(String order) {
      return order;
    }
  }

  public static class Streamed {
    @Idempotent(key = "#id")
    public org.springframework.web.servlet.mvc.method.annotation.SseEmitter call(String id) {
      return new org.springframework.web.servlet.mvc.method.annotation.SseEmitter();
    }
  }

  public static class StreamedBody {
    @Idempotent(key = "#id")
    public org.springframework.web.servlet.mvc.method.annotation.StreamingResponseBody call(
        String id) {
      return out -> out.write(id.getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }
  }

  public static class ReactiveMany {
    @Idempotent(key = "#id")
    public reactor.core.publisher.Flux<String> call(String id) {
      return reactor.core.publisher.Flux.just(id);
    }
  }

  public static class Emitter {
    @Idempotent(key = "#id")
    public org.springframework.web.servlet.mvc.method.annotation.ResponseBodyEmitter call(
        String id) {
      return new org.springframework.web.servlet.mvc.method.annotation.ResponseBodyEmitter();
    }
  }

  public static class PlainFuture {
    @Idempotent(key = "#id")
    public java.util.concurrent.Future<String> call(String id) {
      return CompletableFuture.completedFuture(id);
    }
  }

  public static class Stage {
    @Idempotent(key = "#id")
    public java.util.concurrent.CompletionStage<String> call(String id) {
      return CompletableFuture.completedFuture(id);
    }
  }

  public static class Deferred {
    @Idempotent(key = "#id")
    public org.springframework.web.context.request.async.DeferredResult<String> call(String id) {
      return new org.springframework.web.context.request.async.DeferredResult<>();
    }
  }

  public static class AsyncTask {
    @Idempotent(key = "#id")
    public org.springframework.web.context.request.async.WebAsyncTask<String> call(String id) {
      return new org.springframework.web.context.request.async.WebAsyncTask<>(() -> id);
    }
  }

  /** A request handler returning a Callable: Spring MVC would run it later, on another thread. */
  public static class HandlerCallable {
    @Idempotent(key = "#id")
    @org.springframework.web.bind.annotation.PostMapping("/later")
    public java.util.concurrent.Callable<String> call(String id) {
      return () -> id;
    }
  }

  public static class Download {
    @Idempotent(key = "#id")
    public org.springframework.core.io.Resource call(String id) {
      return new org.springframework.core.io.ByteArrayResource(new byte[] {1});
    }
  }

  public static class Wildcard {
    @Idempotent(key = "#id")
    public org.springframework.http.ResponseEntity<?> call(String id) {
      return org.springframework.http.ResponseEntity.ok(id);
    }
  }

  public static class Bytes {
    @Idempotent(key = "#id")
    public org.springframework.http.ResponseEntity<byte[]> call(String id) {
      return org.springframework.http.ResponseEntity.ok(new byte[] {1});
    }
  }

  public static class Request {
    @Idempotent(key = "#id")
    public org.springframework.http.RequestEntity<String> call(String id) {
      return null;
    }
  }

  /** A domain class that happens to be a Callable: fine on a service method. */
  public record ImportJob(String id) implements java.util.concurrent.Callable<String> {
    @Override
    public String call() {
      return id;
    }
  }

  public static class Imports {
    @Idempotent(key = "#id")
    public ImportJob start(String id) {
      return new ImportJob(id);
    }
  }

  public static class OptionalKeys {
    @Idempotent(key = "#id", scope = "optional-keys")
    public String call(Optional<String> id) {
      return "ran " + id.orElse("?");
    }
  }

  public static class Async {
    @Idempotent(key = "#id")
    public CompletableFuture<String> call(String id) {
      return CompletableFuture.completedFuture(id);
    }
  }

  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(OnceAutoConfiguration.class))
      .withBean(DataSource.class, TestDatabases::sqlite)
      .withPropertyValues("once.jdbc.create-schema=true", "once.in-progress-wait=10s")
      .withBean(Orders.class);

  @Test
  void runsOncePerKeyAndReplaysTheGenericReturnValue() {
    runner.run(context -> {
      Orders orders = context.getBean(Orders.class);
      List<Line> first = orders.place(new Order("o-1", "sku-9", 2));
      List<Line> again = orders.place(new Order("o-1", "sku-9", 2));
      assertThat(orders.runs()).isEqualTo(1);
      assertThat(again).isEqualTo(first).containsExactly(new Line("sku-9", 2));
      assertThat(again.get(0)).isInstanceOf(Line.class);
      IdempotencyStore store = context.getBean(IdempotencyStore.class);
      assertThat(store.find(IdempotencyKey.of("Orders.place", "o-1")))
          .hasValueSatisfying(r -> assertThat(r.status()).isEqualTo(Status.COMPLETED));
    });
  }

  @Test
  void theSameKeyWithOtherArgumentsIsAMisuse() {
    runner.run(context -> {
      Orders orders = context.getBean(Orders.class);
      orders.place(new Order("o-2", "sku-1", 1));
      assertThatThrownBy(() -> orders.place(new Order("o-2", "sku-1", 5)))
          .isInstanceOf(KeyReusedException.class);
      assertThat(orders.runs()).isEqualTo(1);
    });
  }

  @Test
  void tenantsNeverShareARecord() {
    runner.run(context -> {
      Orders orders = context.getBean(Orders.class);
      String alice = orders.pay("alice", "k", 100);
      String bob = orders.pay("bob", "k", 100);
      assertThat(orders.pay("alice", "k", 100)).isEqualTo(alice);
      assertThat(alice).isEqualTo("alice:k:100:1");
      assertThat(bob).isEqualTo("bob:k:100:2");
      assertThat(context.getBean(IdempotencyStore.class)
          .find(IdempotencyKey.of("Orders.pay", "bob", "k"))).isPresent();
    });
  }

  @Test
  void terminalFailuresAreStoredAndReplayedRetryableOnesRunAgain() {
    runner.run(context -> {
      Orders orders = context.getBean(Orders.class);
      assertThatThrownBy(() -> orders.cancel("c-1", true)).isInstanceOf(IllegalStateException.class)
          .hasMessage("already shipped");
      assertThatThrownBy(() -> orders.cancel("c-1", true))
          .isInstanceOf(ReplayedFailureException.class);
      assertThat(orders.runs()).isEqualTo(1);

      // A checked exception passes through unchanged and releases the key.
      assertThatThrownBy(() -> orders.flaky("f-1")).isInstanceOf(IOException.class)
          .hasMessage("connection reset");
      assertThat(orders.flaky("f-1")).isEqualTo("ok f-1");
      assertThat(orders.flaky("f-1")).isEqualTo("ok f-1");
      assertThat(orders.flakyRuns()).isEqualTo(2);
    });
  }

  @Test
  void voidAndOptionalResultsReplay() {
    runner.run(context -> {
      Orders orders = context.getBean(Orders.class);
      orders.cancel("c-2", false);
      orders.cancel("c-2", false);
      assertThat(orders.lookup("l-1", true)).contains("found l-1");
      assertThat(orders.lookup("l-1", true)).contains("found l-1");
      assertThat(orders.lookup("l-2", false)).isEmpty();
      assertThat(orders.lookup("l-2", false)).isEmpty();
      assertThat(orders.runs()).isEqualTo(3);
    });
  }

  @Test
  void aListenerShapedMethodKeysOnAHeaderAndFingerprintsThePayload() {
    runner.run(context -> {
      Orders orders = context.getBean(Orders.class);
      Map<String, Object> headers = Map.of("idempotency-key", "m-1", "delivery", 1);
      Map<String, Object> redelivered = Map.of("idempotency-key", "m-1", "delivery", 2);
      assertThat(orders.onMessage("{\"a\":1}", headers)).isEqualTo(1);
      assertThat(orders.onMessage("{\"a\":1}", redelivered)).isEqualTo(1);
      assertThatThrownBy(() -> orders.onMessage("{\"a\":2}", headers))
          .isInstanceOf(KeyReusedException.class);
      assertThatThrownBy(() -> orders.onMessage("{\"a\":1}", Map.of()))
          .isInstanceOf(InvalidKeyException.class).hasMessageContaining("evaluated to null");
      assertThat(orders.runs()).isEqualTo(1);
    });
  }

  @Test
  void racingThreadsRunTheMethodOnce() {
    runner.run(context -> {
      Orders orders = context.getBean(Orders.class);
      int threads = 8;
      ExecutorService pool = Executors.newFixedThreadPool(threads);
      try {
        CountDownLatch start = new CountDownLatch(1);
        List<Future<Integer>> results = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
          results.add(pool.submit(() -> {
            start.await();
            return orders.race("r-1");
          }));
        }
        start.countDown();
        for (Future<Integer> result : results) {
          assertThat(result.get(30, TimeUnit.SECONDS)).isEqualTo(1);
        }
        assertThat(orders.runs()).isEqualTo(1);
      } finally {
        pool.shutdownNow();
      }
    });
  }

  @Test
  void mistakesFailTheStartup() {
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(OnceAutoConfiguration.class))
        .withPropertyValues("once.store=memory")
        .withBean(BadExpression.class)
        .run(context -> assertThat(context.getStartupFailure())
            .hasMessageContaining("is not a valid SpEL expression"));
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(OnceAutoConfiguration.class))
        .withPropertyValues("once.store=memory")
        .withBean(Async.class)
        .run(context -> assertThat(context.getStartupFailure()).rootCause()
            .hasMessageContaining("asynchronous return types"));
  }

  /** Found in review: an empty Optional key was the literal key "Optional.empty". */
  @Test
  void anOptionalKeyIsItsValueAndAnEmptyOneIsMissing() {
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(OnceAutoConfiguration.class))
        .withPropertyValues("once.store=memory")
        .withBean(OptionalKeys.class)
        .run(context -> {
          OptionalKeys bean = context.getBean(OptionalKeys.class);
          assertThat(bean.call(Optional.of("k-1"))).isEqualTo("ran k-1");
          assertThat(context.getBean(IdempotencyStore.class)
              .find(IdempotencyKey.of("optional-keys", "k-1"))).isPresent();
          assertThatThrownBy(() -> bean.call(Optional.empty()))
              .isInstanceOf(InvalidKeyException.class);
        });
  }

  /**
   * Issue 24: a method returning {@code Mono<T>} started (the check looked at the type's own
   * interfaces only, and {@code Mono} implements {@code Publisher} through {@code CorePublisher}),
   * answered its first call and failed every duplicate. Other reactive types, and streamed
   * responses, now fail the startup, naming the method and what to do; {@code Mono<T>} runs
   * through once-reactor ({@link IdempotentReactiveTest}, which also shows that without it a
   * {@code Mono} method fails the startup).
   */
  @Test
  void returnTypesThatCannotBeStoredFailTheStartupNamingTheMethod() {
    // Reactive types, streamed responses, futures and Spring MVC's asynchronous results: the
    // issue's list, and every type the starter's README names.
    for (Class<?> bean : List.of(ReactiveMany.class, Streamed.class,
        StreamedBody.class, Emitter.class, Async.class, PlainFuture.class, Stage.class,
        Deferred.class, AsyncTask.class, HandlerCallable.class, Download.class,
        Wildcard.class, Bytes.class, Request.class)) {
      new ApplicationContextRunner()
          .withConfiguration(AutoConfigurations.of(OnceAutoConfiguration.class))
          .withPropertyValues("once.store=memory")
          .withBean(bean)
          .run(context -> assertThat(context.getStartupFailure()).as(bean.getSimpleName())
              .rootCause()
              .hasMessageContaining(bean.getName() + ".call")
              .hasMessageMatching("(?s).*(not supported|cannot be|is not known).*")
              // and what to do instead
              .hasMessageMatching("(?s).*(return|declare|put @Idempotent).*"));
    }
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(OnceAutoConfiguration.class))
        .withPropertyValues("once.store=memory")
        .withBean(Imports.class)
        .run(context -> assertThat(context.getBean(Imports.class).start("i-1").id())
            .isEqualTo("i-1"));
  }
}
