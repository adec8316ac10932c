package dev.once.spring.webflux;

import dev.once.OnceListener;
import dev.once.spring.TestDatabaseAccess;
import dev.once.spring.IdempotencyWebFilterCustomizer;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseCookie;
import org.springframework.http.ResponseEntity;
import org.springframework.http.HttpHeaders;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * A reactive Spring Boot application for {@link ReactiveHttpFilterTest}: annotated WebFlux
 * controllers, the starter's defaults on SQLite (a blocking JDBC store, as most are).
 */
@SpringBootConfiguration
@EnableAutoConfiguration
@Import(ReactiveFilterApplication.Charges.class)
public class ReactiveFilterApplication {

  /** The threads every store call ran on. */
  static final Set<String> STORE_THREADS = ConcurrentHashMap.newKeySet();

  @Bean
  DataSource dataSource() {
    return TestDatabaseAccess.sqlite();
  }

  @Bean
  OnceListener storeThreads() {
    return new OnceListener() {
      @Override
      public void onStoreCall(String operation, Duration elapsed, boolean succeeded) {
        STORE_THREADS.add(Thread.currentThread().getName());
      }
    };
  }

  @Bean
  IdempotencyWebFilterCustomizer longerRetryAfter() {
    return filter -> filter.retryAfter(Duration.ofSeconds(2));
  }

  /** Charges: counts how often it really ran; "held" ones wait for their latch. */
  @RestController
  public static class Charges {
    final AtomicInteger runs = new AtomicInteger();
    final Map<String, CountDownLatch> entered = new ConcurrentHashMap<>();
    final Map<String, CountDownLatch> release = new ConcurrentHashMap<>();

    CountDownLatch entered(String id) {
      return entered.computeIfAbsent(id, k -> new CountDownLatch(1));
    }

    CountDownLatch release(String id) {
      return release.computeIfAbsent(id, k -> new CountDownLatch(1));
    }

    @PostMapping("/charges")
    public Mono<ResponseEntity<String>> charge(@RequestBody String body) {
      return Mono.fromSupplier(runs::incrementAndGet).map(id -> ResponseEntity.status(201)
          .contentType(MediaType.APPLICATION_JSON)
          .header("Location", "/charges/ch_" + id)
          .header(HttpHeaders.SET_COOKIE, ResponseCookie.from("session", "s" + id).build()
              .toString())
          .body("{\"id\":\"ch_" + id + "\",\"request\":" + body + "}"));
    }

    @PostMapping("/charges/held/{id}")
    public Mono<String> held(@PathVariable String id) {
      return Mono.fromCallable(() -> {
        runs.incrementAndGet();
        entered(id).countDown();
        return release(id).await(30, TimeUnit.SECONDS) ? "released " + id : "timed out";
      }).subscribeOn(Schedulers.boundedElastic());
    }
  }
}
