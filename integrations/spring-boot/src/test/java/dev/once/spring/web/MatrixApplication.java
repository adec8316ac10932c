package dev.once.spring.web;

import dev.once.spring.Idempotent;
import java.net.URI;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Import;
import org.springframework.http.HttpEntity;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.jdbc.datasource.DelegatingDataSource;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.ResponseStatus;
import org.springframework.web.bind.annotation.RestController;

/**
 * The web application of {@link IdempotentMatrixContract}: one {@code @Idempotent} controller
 * method per return type a controller has (under {@code /matrix/}), each keyed on the
 * {@code Idempotency-Key} header and fingerprinted on its JSON body, and a plain controller under
 * the Idempotency-Key filter ({@code /filtered/}), so that the two can be compared. The store and
 * an {@link Outage} switch come from the test class (each store's its own).
 */
@SpringBootConfiguration
@EnableAutoConfiguration
@Import({MatrixApplication.Matrix.class, MatrixApplication.Filtered.class,
    MatrixApplication.Gate.class})
public class MatrixApplication {

  /** The header every route is keyed on. */
  static final String KEY = "Idempotency-Key";

  /** What a client sends. */
  public record Charge(long amount) {}

  /** What a route answers: {@code id} counts the runs of its route, so a re-run shows. */
  public record Receipt(String id, long amount) {}

  /** Cuts the store off (true) or brings it back (false). */
  public interface Outage {
    void down(boolean down);
  }

  /** A DataSource whose connections are refused while it is down, as a stopped server's are. */
  public static class SwitchableDataSource extends DelegatingDataSource implements AutoCloseable {
    private volatile boolean down;

    public SwitchableDataSource(DataSource target) {
      super(target);
    }

    public void down(boolean down) {
      this.down = down;
    }

    @Override
    public Connection getConnection() throws SQLException {
      refuseWhileDown();
      return super.getConnection();
    }

    @Override
    public Connection getConnection(String username, String password) throws SQLException {
      refuseWhileDown();
      return super.getConnection(username, password);
    }

    private void refuseWhileDown() throws SQLException {
      if (down) {
        throw new SQLTransientConnectionException("Connection refused (test outage)", "08001");
      }
    }

    @Override
    public void close() throws Exception {
      if (getTargetDataSource() instanceof AutoCloseable closeable) {
        closeable.close();
      }
    }
  }

  /**
   * Holds the run of a key until released, so that a duplicate arrives while the first runs.
   */
  public static class Gate {
    private final Map<String, Hold> holds = new ConcurrentHashMap<>();

    /** The next run of {@code key} signals {@link Hold#entered} and waits for its release. */
    public Hold hold(String key) {
      Hold hold = new Hold(new CountDownLatch(1), new CountDownLatch(1));
      holds.put(key, hold);
      return hold;
    }

    void pass(String key) {
      Hold hold = key == null ? null : holds.remove(key);
      if (hold != null) {
        hold.entered().countDown();
        try {
          hold.release().await(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    }

    /** A held run: {@code entered} once it runs, then it waits for {@code release}. */
    public record Hold(CountDownLatch entered, CountDownLatch release) {}
  }

  /** A business failure the controller maps with {@code @ExceptionHandler} to a 402 problem. */
  public static class Declined extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Declined(String message) {
      super(message);
    }
  }

  /** A business failure mapped with {@code @ResponseStatus}: Spring answers it with sendError. */
  @ResponseStatus(value = HttpStatus.GONE, reason = "offer withdrawn")
  public static class Withdrawn extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Withdrawn(String message) {
      super(message);
    }
  }

  /** {@code @Idempotent} on controller methods, one per return type. */
  @RestController
  @RequestMapping("/matrix")
  public static class Matrix {
    private final Gate gate;
    private final Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();

    public Matrix(Gate gate) {
      this.gate = gate;
    }

    /** How often the route's method body ran. */
    public int runs(String route) {
      AtomicInteger count = runs.get(route);
      return count == null ? 0 : count.get();
    }

    private Receipt run(String route, String key, Charge charge) {
      int run = runs.computeIfAbsent(route, r -> new AtomicInteger()).incrementAndGet();
      gate.pass(key);
      return new Receipt(route + "-" + run, charge.amount());
    }

    @PostMapping("/entity")
    @Idempotent(key = "#key", fingerprint = "#charge")
    public ResponseEntity<Receipt> entity(@RequestHeader(name = KEY, required = false) String key,
        @RequestBody Charge charge) {
      Receipt receipt = run("entity", key, charge);
      return ResponseEntity.status(HttpStatus.CREATED)
          .location(URI.create("/receipts/" + receipt.id()))
          .eTag("\"" + receipt.id() + "\"")
          .header(HttpHeaders.SET_COOKIE, "session=" + receipt.id())
          .body(receipt);
    }

    @PostMapping("/void")
    @Idempotent(key = "#key", fingerprint = "#charge")
    @ResponseStatus(HttpStatus.ACCEPTED)
    public void accept(@RequestHeader(name = KEY, required = false) String key,
        @RequestBody Charge charge) {
      run("void", key, charge);
    }

    @PostMapping("/optional")
    @Idempotent(key = "#key", fingerprint = "#charge")
    public Optional<Receipt> optional(@RequestHeader(name = KEY, required = false) String key,
        @RequestBody Charge charge) {
      return Optional.of(run("optional", key, charge));
    }

    @PostMapping("/record")
    @Idempotent(key = "#key", fingerprint = "#charge")
    public Receipt record(@RequestHeader(name = KEY, required = false) String key,
        @RequestBody Charge charge) {
      return run("record", key, charge);
    }

    /** The key header required, as {@code @RequestHeader} has it by default. */
    @PostMapping("/required-header")
    @Idempotent(key = "#key", fingerprint = "#charge")
    public Receipt requiredHeader(@RequestHeader(KEY) String key, @RequestBody Charge charge) {
      return run("required-header", key, charge);
    }

    @PostMapping("/collection")
    @Idempotent(key = "#key", fingerprint = "#charge")
    public List<Receipt> collection(@RequestHeader(name = KEY, required = false) String key,
        @RequestBody Charge charge) {
      Receipt receipt = run("collection", key, charge);
      return List.of(receipt, new Receipt(receipt.id() + "-fee", 30));
    }

    @PostMapping("/primitive")
    @Idempotent(key = "#key", fingerprint = "#charge")
    public long primitive(@RequestHeader(name = KEY, required = false) String key,
        @RequestBody Charge charge) {
      run("primitive", key, charge);
      return runs("primitive") * 1_000_000L + charge.amount();
    }

    @PostMapping("/http-entity")
    @Idempotent(key = "#key", fingerprint = "#charge")
    public HttpEntity<Receipt> httpEntity(@RequestHeader(name = KEY, required = false) String key,
        @RequestBody Charge charge) {
      Receipt receipt = run("http-entity", key, charge);
      HttpHeaders headers = new HttpHeaders();
      headers.set(HttpHeaders.CONTENT_LANGUAGE, "en");
      headers.set(HttpHeaders.LINK, "</receipts/" + receipt.id() + ">; rel=\"self\"");
      return new HttpEntity<>(receipt, headers);
    }

    @PostMapping("/problem")
    @Idempotent(key = "#key", fingerprint = "#charge")
    public ProblemDetail problem(@RequestHeader(name = KEY, required = false) String key,
        @RequestBody Charge charge) {
      Receipt receipt = run("problem", key, charge);
      ProblemDetail problem = ProblemDetail.forStatusAndDetail(HttpStatus.PAYMENT_REQUIRED,
          "declined as " + receipt.id());
      problem.setType(URI.create("https://payments.example/problems/declined"));
      problem.setTitle("Card declined");
      return problem;
    }

    @PostMapping("/handled-exception")
    @Idempotent(key = "#key", fingerprint = "#charge")
    public Receipt handledException(@RequestHeader(name = KEY, required = false) String key,
        @RequestBody Charge charge) {
      throw new Declined("declined as " + run("handled-exception", key, charge).id());
    }

    @PostMapping("/status-exception")
    @Idempotent(key = "#key", fingerprint = "#charge")
    public Receipt statusException(@RequestHeader(name = KEY, required = false) String key,
        @RequestBody Charge charge) {
      throw new Withdrawn("withdrawn as " + run("status-exception", key, charge).id());
    }

    /** The same exception made terminal: stored as a failure (compensated, were there steps). */
    @PostMapping("/handled-terminal")
    @Idempotent(key = "#key", fingerprint = "#charge", terminalOn = Declined.class)
    public Receipt handledTerminal(@RequestHeader(name = KEY, required = false) String key,
        @RequestBody Charge charge) {
      throw new Declined("declined as " + run("handled-terminal", key, charge).id());
    }

    @PostMapping("/status-terminal")
    @Idempotent(key = "#key", fingerprint = "#charge", terminalOn = Withdrawn.class)
    public Receipt statusTerminal(@RequestHeader(name = KEY, required = false) String key,
        @RequestBody Charge charge) {
      throw new Withdrawn("withdrawn as " + run("status-terminal", key, charge).id());
    }

    @ExceptionHandler
    ResponseEntity<ProblemDetail> declined(Declined e) {
      ProblemDetail problem = ProblemDetail.forStatusAndDetail(HttpStatus.PAYMENT_REQUIRED,
          e.getMessage());
      problem.setTitle("Card declined");
      return ResponseEntity.status(HttpStatus.PAYMENT_REQUIRED)
          .contentType(MediaType.APPLICATION_PROBLEM_JSON)
          .header(HttpHeaders.LINK, "</help/declined>; rel=\"help\"")
          .header(HttpHeaders.SET_COOKIE, "declined=1")
          .body(problem);
    }
  }

  /** The same kind of route, protected by the Idempotency-Key filter instead. */
  @RestController
  public static class Filtered {
    private final Gate gate;
    private final AtomicInteger runs = new AtomicInteger();

    public Filtered(Gate gate) {
      this.gate = gate;
    }

    @PostMapping("/filtered/record")
    public Receipt record(@RequestHeader(name = KEY, required = false) String key,
        @RequestBody Charge charge) {
      int run = runs.incrementAndGet();
      gate.pass(key);
      return new Receipt("filtered-" + run, charge.amount());
    }
  }
}
