package dev.once.testkit.http;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The state of the application behind the adapter under {@link HttpIdempotencyContract}: every
 * handled request is counted per caller and {@code Idempotency-Key}, so the contract can tell
 * executions from replays. The adapter's test implements the routes over its own framework (a
 * servlet, a JAX-RS resource) and calls {@link #handled} first in each; the routes, by the last
 * path segment (and the one before it):
 *
 * <ul>
 *   <li>any GET: 200 {@code text/plain} "get #serial";
 *   <li>{@code status/N}: status N, text "status N #serial";
 *   <li>{@code flushed/N}: N bytes {@code f}, {@code application/octet-stream}, Content-Length
 *       declared and flushed before returning;
 *   <li>{@code held/N}: as {@code flushed}, then held at {@link #gate} until released;
 *   <li>{@code big/N}: N bytes {@code x}, {@code application/octet-stream};
 *   <li>{@code charges}: 201, {@code application/json} {"id":"ch_serial","request":body},
 *       {@code Location: /api/charges/ch_serial}, {@code X-Execution: n}, a
 *       {@code Set-Cookie: session=…};
 *   <li>{@code slow}: the first execution of a key waits at its {@link #gate}, then 200 text
 *       "slow #serial" (later executions answer at once);
 *   <li>{@code boom}: the first execution of a key throws {@link IllegalStateException} out of the
 *       application (see {@link #failsOnce}), later ones answer 200 "recovered #serial";
 *   <li>{@code writer}: {@code text/plain;charset=UTF-8} "héllo ✓ #serial", flushed, then
 *       " and more", written as characters;
 *   <li>{@code form}: "a=A b=[B1, B2] q=Q #serial" from the form and query parameters;
 *   <li>{@code reader}: "read BODY #serial", the body read as text;
 *   <li>{@code redirect}: 303 to {@code /api/elsewhere/serial};
 *   <li>{@code senderror}: 404 through the framework's own error path, outside the captured
 *       response (a servlet's {@code sendError}, a JAX-RS {@code NotFoundException});
 *   <li>{@code attempt}: 200 text, the running attempt's downstream key, or "none";
 *   <li>{@code stepped}: a durable step "mail" whose value is {@link #mail}, then 503 with it at the
 *       first execution, 200 after;
 *   <li>anything else: 200 "ok #serial".
 * </ul>
 *
 * Text bodies are UTF-8, {@code text/plain;charset=UTF-8}.
 */
public final class ContractApp {

  /** Holds a request inside the handler until released. */
  public static final class Gate {
    /** Counted down when a request enters the handler. */
    public final CountDownLatch entered = new CountDownLatch(1);
    /** Counted down by the test to let it go. */
    public final CountDownLatch release = new CountDownLatch(1);

    /** Marks the entry, then waits (at most 30 s) for the release. */
    public void pass() {
      entered.countDown();
      try {
        if (!release.await(30, TimeUnit.SECONDS)) {
          throw new IllegalStateException("gate never released");
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException(e);
      }
    }
  }

  private final Map<String, AtomicInteger> executions = new ConcurrentHashMap<>();
  private final Map<String, Gate> gates = new ConcurrentHashMap<>();
  private final Map<String, AtomicInteger> failuresLeft = new ConcurrentHashMap<>();
  private final Map<String, AtomicInteger> mails = new ConcurrentHashMap<>();
  private final AtomicInteger total = new AtomicInteger();

  /** One handled request. */
  public record Handled(int execution, int serial) {}

  /**
   * Counts a request as handled: {@code caller} is the {@code X-User} header, else the
   * {@code X-Api-Key} header, else "null"; {@code key} the raw key header or "null".
   */
  public Handled handled(String caller, String key) {
    int n = executions.computeIfAbsent(caller + "|" + key, k -> new AtomicInteger())
        .incrementAndGet();
    return new Handled(n, total.incrementAndGet());
  }

  /** How often the handler ran for this caller and raw key header value. */
  public int executions(String caller, String key) {
    AtomicInteger n = executions.get(caller + "|" + key);
    return n == null ? 0 : n.get();
  }

  /** How many requests were handled in all. */
  public int total() {
    return total.get();
  }

  /** The gate of a key. */
  public Gate gate(String key) {
    return gates.computeIfAbsent(key, k -> new Gate());
  }

  /** True the first time it is asked for {@code key}: the {@code boom} route then throws. */
  public boolean failsOnce(String key) {
    return failuresLeft.computeIfAbsent(key, k -> new AtomicInteger(1)).getAndDecrement() > 0;
  }

  /** The effect of the {@code stepped} route's durable step: "mail #n", n counted per key. */
  public String mail(String key) {
    return "mail #" + mails.computeIfAbsent(key, x -> new AtomicInteger()).incrementAndGet();
  }

  /** How often the durable step of {@code key} ran. */
  public int mails(String key) {
    AtomicInteger n = mails.get(key);
    return n == null ? 0 : n.get();
  }
}
