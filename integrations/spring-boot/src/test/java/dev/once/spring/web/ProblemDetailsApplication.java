package dev.once.spring.web;

import dev.once.spring.Idempotent;
import dev.once.spring.TestDatabaseAccess;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.bind.annotation.RestControllerAdvice;

/**
 * A web application whose controllers call {@link Idempotent} methods, without the filter, for
 * {@link ProblemDetailsTest}: what leaves them becomes problem+json. It also has the kind of
 * catch-all advice many applications have, which must not swallow Once's answers.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
@Import({ProblemDetailsApplication.Payments.class, ProblemDetailsApplication.Charges.class,
    ProblemDetailsApplication.CatchAll.class, ProblemDetailsApplication.Refunds.class})
public class ProblemDetailsApplication {

  @Bean
  DataSource dataSource() {
    return TestDatabaseAccess.sqlite();
  }

  /** A refund, as a controller returns it. */
  public record Refund(String id, long amount) {}

  /**
   * {@code @Idempotent} on the controller methods themselves, keyed on the Idempotency-Key
   * header: a {@code ResponseEntity} (status, headers and body replayed) and a record.
   */
  @RestController
  public static class Refunds {
    private final AtomicInteger runs = new AtomicInteger();

    public int runs() {
      return runs.get();
    }

    @PostMapping("/refunds")
    @Idempotent(key = "#key", scope = "refunds.create")
    public ResponseEntity<Refund> create(@RequestHeader("Idempotency-Key") String key,
        @RequestParam long amount) {
      Refund refund = new Refund("re_" + runs.incrementAndGet(), amount);
      return ResponseEntity.status(201).header("Location", "/refunds/" + refund.id())
          .header("Set-Cookie", "session=secret").body(refund);
    }

    @PostMapping("/refunds/created")
    @Idempotent(key = "#key", scope = "refunds.created")
    public org.springframework.http.HttpEntity<Refund> created(
        @RequestHeader("Idempotency-Key") String key, @RequestParam long amount) {
      Refund refund = new Refund("re_" + runs.incrementAndGet(), amount);
      return ResponseEntity.created(java.net.URI.create("/refunds/" + refund.id())).body(refund);
    }

    @PostMapping("/refunds/unavailable")
    @Idempotent(key = "#key", scope = "refunds.unavailable")
    public ResponseEntity<Refund> unavailable(@RequestHeader("Idempotency-Key") String key) {
      runs.incrementAndGet();
      return ResponseEntity.status(503).build();
    }

    @PostMapping("/refunds/void")
    @Idempotent(key = "#key", scope = "refunds.void")
    @org.springframework.web.bind.annotation.ResponseStatus(
        org.springframework.http.HttpStatus.ACCEPTED)
    public void accept(@RequestHeader("Idempotency-Key") String key) {
      runs.incrementAndGet();
    }

    @PostMapping("/refunds/optional")
    @Idempotent(key = "#key", scope = "refunds.optional")
    public java.util.Optional<Refund> find(@RequestHeader("Idempotency-Key") String key,
        @RequestParam long amount) {
      return amount == 0 ? java.util.Optional.empty()
          : java.util.Optional.of(new Refund("re_" + runs.incrementAndGet(), amount));
    }

    @PostMapping("/refunds/list")
    @Idempotent(key = "#key", scope = "refunds.list")
    public java.util.List<Refund> split(@RequestHeader("Idempotency-Key") String key) {
      return java.util.List.of(new Refund("re_a" + runs.incrementAndGet(), 1),
          new Refund("re_b" + runs.get(), 2));
    }

    @PostMapping("/refunds/count")
    @Idempotent(key = "#key", scope = "refunds.count")
    public int count(@RequestHeader("Idempotency-Key") String key) {
      return runs.incrementAndGet();
    }

    @PostMapping("/refunds/problem")
    @Idempotent(key = "#key", scope = "refunds.problem")
    public org.springframework.http.ProblemDetail problem(
        @RequestHeader("Idempotency-Key") String key) {
      runs.incrementAndGet();
      org.springframework.http.ProblemDetail problem = org.springframework.http.ProblemDetail
          .forStatusAndDetail(org.springframework.http.HttpStatus.CONFLICT, "already refunded");
      problem.setTitle("Refund refused");
      return problem;
    }

    @PostMapping("/refunds/preview")
    @Idempotent(key = "#key", scope = "refunds.preview")
    public Refund preview(@RequestHeader("Idempotency-Key") String key,
        @RequestParam long amount) {
      return new Refund("preview_" + runs.incrementAndGet(), amount);
    }
  }

  /** The idempotent service. */
  public static class Payments {
    private final AtomicInteger runs = new AtomicInteger();
    private volatile CountDownLatch entered = new CountDownLatch(1);
    private volatile CountDownLatch release = new CountDownLatch(0);

    public int runs() {
      return runs.get();
    }

    /** The next slow call signals {@code entered} and waits for {@code release}. */
    public void holdNextSlowCall(CountDownLatch entered, CountDownLatch release) {
      this.entered = entered;
      this.release = release;
    }

    @Idempotent(key = "#key", scope = "charges")
    public Map<String, Object> charge(String key, long amount) {
      return Map.of("id", "ch_" + runs.incrementAndGet(), "amount", amount);
    }

    @Idempotent(key = "#key", scope = "slow")
    public Map<String, Object> slow(String key) throws InterruptedException {
      entered.countDown();
      release.await(30, TimeUnit.SECONDS);
      return Map.of("id", "slow_" + runs.incrementAndGet());
    }

    @Idempotent(key = "#key", scope = "reports")
    public String report(String key) {
      runs.incrementAndGet();
      return "x".repeat(4000); // more than once.max-payload: not stored
    }

    @Idempotent(key = "#key", scope = "declines", terminalOn = IllegalArgumentException.class)
    public Map<String, Object> decline(String key) {
      runs.incrementAndGet();
      throw new IllegalArgumentException("card declined");
    }
  }

  /** The HTTP side. */
  @RestController
  public static class Charges {
    private final Payments payments;

    public Charges(Payments payments) {
      this.payments = payments;
    }

    @PostMapping("/charges/{key}")
    public Map<String, Object> charge(@PathVariable String key, @RequestParam long amount) {
      return payments.charge(key, amount);
    }

    @PostMapping("/slow/{key}")
    public Map<String, Object> slow(@PathVariable String key) throws InterruptedException {
      return payments.slow(key);
    }

    @PostMapping("/declines/{key}")
    public Map<String, Object> decline(@PathVariable String key) {
      return payments.decline(key);
    }

    @PostMapping("/reports/{key}")
    public String report(@PathVariable String key) {
      return payments.report(key);
    }

    /** Under the Idempotency-Key filter (once.http.paths), calling the same service. */
    @PostMapping("/filtered/slow/{key}")
    public Map<String, Object> filteredSlow(@PathVariable String key) throws InterruptedException {
      return payments.slow(key);
    }

    @PostMapping("/orders")
    public Map<String, Object> order(
        @RequestHeader(name = "X-Order-Key", required = false) String key) {
      return payments.charge(key, 1);
    }
  }

  /** An application's own catch-all: turns what it does not know into a plain 500. */
  @RestControllerAdvice
  public static class CatchAll {
    @ExceptionHandler(Exception.class)
    public org.springframework.http.ResponseEntity<String> any(Exception e) {
      return org.springframework.http.ResponseEntity.status(500).body("catch-all: " + e);
    }
  }
}
