package dev.once.servlet;

import dev.once.Attempt;
import dev.once.testkit.http.ContractApp;
import jakarta.servlet.http.Cookie;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/** The contract's application ({@link ContractApp}) as a servlet. */
final class TestApp extends HttpServlet {
  private static final long serialVersionUID = 1L;

  private final transient ContractApp app;

  TestApp(ContractApp app) {
    this.app = app;
  }

  @Override
  protected void service(HttpServletRequest req, HttpServletResponse res) throws IOException {
    String key = String.valueOf(req.getHeader("Idempotency-Key"));
    String caller = req.getHeader("X-User") != null ? req.getHeader("X-User")
        : String.valueOf(req.getHeader("X-Api-Key"));
    ContractApp.Handled handled = app.handled(caller, key);
    int n = handled.execution();
    int serial = handled.serial();
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
      app.gate(key).pass();
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
        if (n == 1) {
          app.gate(key).pass();
        } else {
          app.gate(key).entered.countDown();
        }
        text(res, 200, "slow #" + serial);
      }
      case "boom" -> {
        if (app.failsOnce(key)) {
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
            dev.once.Codecs.utf8(), k -> app.mail(key));
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
