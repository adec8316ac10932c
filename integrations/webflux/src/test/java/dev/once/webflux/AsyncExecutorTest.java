package dev.once.webflux;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.InMemoryStore;
import dev.once.Once;
import dev.once.testkit.http.ContractApp;
import dev.once.testkit.http.ContractHttp;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** Where the filter's store calls run: the Once's asyncExecutor, and what its refusal means. */
class AsyncExecutorTest {

  final ContractApp app = new ContractApp();

  @Test
  void everyStoreCallRunsOnTheOncesAsyncExecutor() {
    AtomicInteger tasks = new AtomicInteger();
    ExecutorService pool = Executors.newFixedThreadPool(2, r -> {
      Thread thread = new Thread(r, "store-" + tasks.get());
      thread.setDaemon(true);
      return thread;
    });
    Once once = Once.builder(new InMemoryStore())
        .asyncExecutor(task -> {
          tasks.incrementAndGet();
          pool.execute(task);
        }).build();
    try (TestServer server = TestServer.start(
        List.of(IdempotencyWebFilter.builder(once).build()), new ContractHandler(app))) {
      ContractHttp http = new ContractHttp(server);
      HttpResponse<byte[]> first = http.post("/charges", null, "k-1", "{}");
      HttpResponse<byte[]> retry = http.post("/charges", null, "k-1", "{}");

      assertThat(first.statusCode()).isEqualTo(201);
      assertThat(ContractHttp.header(retry, "Idempotent-Replayed")).isEqualTo("true");
      // The in-memory store has no asynchronous claim or completion of its own, so each runs on
      // the executor's thread that goes on from it: the first, its claim (and the chain), then
      // storing its outcome; the retry, its claim.
      assertThat(tasks.get()).isEqualTo(3);
      assertThat(app.executions("null", "k-1")).isEqualTo(1);
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void anExecutorThatRefusesTheClaimIsA503AndNothingRuns() {
    Once once = Once.builder(new InMemoryStore())
        .asyncExecutor(task -> {
          throw new RejectedExecutionException("full");
        }).build();
    try (TestServer server = TestServer.start(
        List.of(IdempotencyWebFilter.builder(once).build()), new ContractHandler(app))) {
      ContractHttp http = new ContractHttp(server);
      HttpResponse<byte[]> response = http.post("/charges", null, "k-2", "{}");

      assertThat(response.statusCode()).isEqualTo(503);
      assertThat(ContractHttp.header(response, "Retry-After")).isEqualTo("1");
      assertThat(ContractHttp.text(response)).contains("idempotency-store-unavailable");
      assertThat(app.total()).isZero();
    }
  }
}
