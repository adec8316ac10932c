package dev.once.servlet;

import dev.once.Attempt;
import jakarta.servlet.http.Cookie;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The application behind the filter. What it does depends on the last path segment; every
 * handled request is counted per caller and Idempotency-Key, so tests can tell executions from
 * replays.
 */
final class TestApp extends HttpServlet {
  private static final long serialVersionUID = 1L;

  /** Holds a request inside the handler until released. */
  static final class Gate {
    final CountDownLatch entered = new CountDownLatch(1);
    final CountDownLatch release = new CountDownLatch(1);
  }

  final transient Map<String, AtomicInteger> executions = new ConcurrentHashMap<>();
  final transient Map<String, Gate> gates = new ConcurrentHashMap<>();
  final transient Map<String, AtomicInteger> failuresLeft = new ConcurrentHashMap<>();
  final AtomicInteger total = new AtomicInteger();
  /** Effects of the "stepped" handler's durable step, per key. */
  final transient Map<String, AtomicInteger> mails = new ConcurrentHashMap<>();

  /** How often the handler ran for this caller and raw key header value. */
  int executions(String caller, String key) {
    AtomicInteger n = executions.get(caller + "|" + key);
    return n == null ? 0 : n.get();
  }

  Gate gate(String key) {
    return gates.computeIfAbsent(key, k -> new Gate());
  }

  @Override
  protected void service(HttpServletRequest req, HttpServletResponse res) throws IOException {
    String key = String.valueOf(req.getHeader("Idempotency-Key"));
    String caller = req.getHeader("X-User") != null ? req.getHeader("X-User")
        : String.valueOf(req.getHeader("X-Api-Key"));
    int n = executions.computeIfAbsent(caller + "|" + key, k -> new AtomicInteger())
        .incrementAndGet();
    int serial = total.incrementAndGet();
    String path = req.getRequestURI();
    String[] segments = path.split("/");
    String action = segments[segments.length - 1];
    String previous = segments.length > 1 ? segments[segments.length - 2] : "";

    if (req.getMethod().equals("GET")) {
      text(res, 200, "get " + serial);
      return;
    }
    if (previous.equals("status")) {
      text(res, Integer.parseInt(action), "status " + action + " #" + serial);
      return;
    }
    if (previous.equals("flushed")) {
      // Declares its length and flushes, as many frameworks do: without the filter holding the
      // answer back, the client has all of it before the handler returns.
      byte[] body = new byte[Integer.parseInt(action)];
      Arrays.fill(body, (byte) 'f');
      res.setContentType("application/octet-stream");
      res.setContentLength(body.length);
      res.getOutputStream().write(body);
      res.flushBuffer();
      return;
    }
    if (previous.equals("held")) {
      // Flushes its whole answer, then is held inside the handler until the test releases it.
      byte[] body = new byte[Integer.parseInt(action)];
      Arrays.fill(body, (byte) 'h');
      res.setContentType("application/octet-stream");
      res.setContentLength(body.length);
      res.getOutputStream().write(body);
      res.flushBuffer();
      Gate gate = gate(key);
      gate.entered.countDown();
      try {
        if (!gate.release.await(30, TimeUnit.SECONDS)) {
          throw new IllegalStateException("gate never released");
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException(e);
      }
      return;
    }
    if (previous.equals("big")) {
      int size = Integer.parseInt(action);
      byte[] body = new byte[size];
      Arrays.fill(body, (byte) 'x');
      res.setContentType("application/octet-stream");
      res.getOutputStream().write(body);
      return;
    }
    switch (action) {
      case "charges" -> {
        String body = new String(req.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        res.setStatus(201);
        res.setContentType("application/json");
        res.setHeader("Location", "/api/charges/ch_" + serial);
        res.setHeader("X-Execution", Integer.toString(n));
        res.addCookie(new Cookie("session", "s" + serial));
        res.getOutputStream().write(("{\"id\":\"ch_" + serial + "\",\"request\":" + body + "}")
            .getBytes(StandardCharsets.UTF_8));
      }
      case "slow" -> {
        // Only the first execution of a key hangs: it stands for a worker that stalls or dies.
        Gate gate = gate(key);
        gate.entered.countDown();
        try {
          if (n > 1) {
            text(res, 200, "slow #" + serial);
            return;
          }
          if (!gate.release.await(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException("gate never released");
          }
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new IllegalStateException(e);
        }
        text(res, 200, "slow #" + serial);
      }
      case "boom" -> {
        AtomicInteger left = failuresLeft.computeIfAbsent(key, k -> new AtomicInteger(1));
        if (left.getAndDecrement() > 0) {
          throw new IllegalStateException("handler crashed on purpose");
        }
        text(res, 200, "recovered #" + serial);
      }
      case "writer" -> {
        res.setContentType("text/plain");
        res.setCharacterEncoding("UTF-8");
        PrintWriter out = res.getWriter();
        out.print("héllo ✓ #" + serial);
        res.flushBuffer();
        out.print(" and more");
      }
      case "form" -> text(res, 200, "a=" + req.getParameter("a") + " b="
          + Arrays.toString(req.getParameterValues("b")) + " q=" + req.getParameter("q")
          + " #" + serial);
      case "reader" -> {
        String body = req.getReader().lines().reduce("", String::concat);
        text(res, 200, "read " + body + " #" + serial);
      }
      case "redirect" -> res.sendRedirect("/api/elsewhere/" + serial, 303);
      case "senderror" -> res.sendError(404, "nothing here");
      case "attempt" -> text(res, 200, IdempotencyFilter.attempt(req).map(Attempt::key)
          .orElse("none"));
      case "stepped" -> {
        // A durable step (a mail no one can deduplicate), then a 503 the first time: the
        // response is not stored and the retry runs the handler again, but not the step.
        String mail = IdempotencyFilter.attempt(req).orElseThrow().step("mail",
            dev.once.Codecs.utf8(), k -> "mail #" + mails.computeIfAbsent(key,
                x -> new AtomicInteger()).incrementAndGet());
        text(res, n == 1 ? 503 : 200, mail);
      }
      default -> text(res, 200, "ok #" + serial);
    }
  }

  private static void text(HttpServletResponse res, int status, String body) throws IOException {
    res.setStatus(status);
    res.setContentType("text/plain;charset=UTF-8");
    res.getOutputStream().write(body.getBytes(StandardCharsets.UTF_8));
  }
}
