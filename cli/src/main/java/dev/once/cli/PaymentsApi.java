package dev.once.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.once.servlet.IdempotencyFilter;
import dev.once.http.IdempotencyProblem;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * The small payments API of {@code once serve}: {@code POST /charges} debits a customer's wallet,
 * {@code GET /charges/ID} shows a charge, {@code GET /wallets/CUSTOMER} the balance. Behind the
 * {@link IdempotencyFilter}, a retried POST with the same {@code Idempotency-Key} gets the first
 * response back instead of a second debit. Wallets live in memory: a restart refills them, while the
 * idempotency records stay in the store.
 */
final class PaymentsApi extends HttpServlet {
  private static final long serialVersionUID = 1L;

  /** What every new customer's wallet holds, in cents. */
  static final long OPENING_BALANCE_CENTS = 100_00;

  private static final ObjectMapper JSON = new ObjectMapper();

  private final transient Map<String, AtomicLong> wallets = new ConcurrentHashMap<>();
  private final transient Map<String, ObjectNode> charges = new ConcurrentHashMap<>();
  private final transient AtomicLong sequence = new AtomicLong();
  private final transient LongAdder debits = new LongAdder();

  /** Charges executed (each a debit), replays not counted. */
  long debits() {
    return debits.sum();
  }

  long balance(String customer) {
    return wallet(customer).get();
  }

  @Override
  protected void doPost(HttpServletRequest request, HttpServletResponse response)
      throws IOException {
    if (!"/charges".equals(path(request))) {
      problem(request, response, 404, "not-found", "Not found",
          "No such resource: POST " + path(request));
      return;
    }
    JsonNode body;
    try {
      body = JSON.readTree(request.getInputStream());
    } catch (IOException e) {
      problem(request, response, 400, "invalid-json", "Body is not JSON", "The body is not JSON.");
      return;
    }
    if (body == null || !body.path("customer").isTextual() || !body.path("amount").canConvertToLong()
        || body.path("customer").asText().isBlank()) {
      problem(request, response, 400, "invalid-charge", "Invalid charge",
          "Expected {\"customer\": \"cus_1\", \"amount\": 1250} (amount in cents).");
      return;
    }
    String customer = body.path("customer").asText();
    long amount = body.path("amount").asLong();
    if (amount <= 0) {
      problem(request, response, 400, "invalid-charge", "Invalid charge",
          "amount must be positive, was " + amount);
      return;
    }
    AtomicLong wallet = wallet(customer);
    long balance;
    while (true) {
      long before = wallet.get();
      if (before < amount) {
        problem(request, response, 402, "insufficient-funds", "Insufficient funds",
            "Wallet of " + customer + " holds " + before
            + " cents; the charge needs " + amount + ".");
        return;
      }
      if (wallet.compareAndSet(before, before - amount)) {
        balance = before - amount;
        break;
      }
    }
    debits.increment();
    String id = "ch_" + sequence.incrementAndGet();
    ObjectNode charge = JSON.createObjectNode().put("id", id).put("customer", customer)
        .put("amount", amount).put("balance", balance);
    // The downstream key a real gateway would get: the same for every retry of this request.
    IdempotencyFilter.attempt(request).ifPresent(a -> charge.put("downstreamKey", a.key()));
    charges.put(id, charge);
    response.setStatus(201);
    response.setHeader("Location", "/charges/" + id);
    json(response, charge);
  }

  @Override
  protected void doGet(HttpServletRequest request, HttpServletResponse response)
      throws IOException {
    String path = path(request);
    if (path.startsWith("/charges/")) {
      ObjectNode charge = charges.get(path.substring("/charges/".length()));
      if (charge == null) {
        problem(request, response, 404, "not-found", "Not found", "No such charge.");
      } else {
        json(response, charge);
      }
    } else if (path.startsWith("/wallets/") && path.length() > "/wallets/".length()) {
      String customer = path.substring("/wallets/".length());
      json(response, JSON.createObjectNode().put("customer", customer)
          .put("balance", balance(customer)));
    } else if (path.equals("/")) {
      response.setContentType("text/plain;charset=UTF-8");
      response.getWriter().print("Once payments API\n\n"
          + "POST /charges        {\"customer\": \"cus_1\", \"amount\": 1250}"
          + " with an Idempotency-Key header\n"
          + "GET  /charges/ID     a charge\n"
          + "GET  /wallets/NAME   a wallet (opening balance " + OPENING_BALANCE_CENTS
          + " cents)\n");
    } else {
      problem(request, response, 404, "not-found", "Not found", "No such resource: GET " + path);
    }
  }

  private AtomicLong wallet(String customer) {
    return wallets.computeIfAbsent(customer, c -> new AtomicLong(OPENING_BALANCE_CENTS));
  }

  private static String path(HttpServletRequest request) {
    String path = request.getRequestURI().substring(request.getContextPath().length());
    return path.isEmpty() ? "/" : path;
  }

  private static void json(HttpServletResponse response, JsonNode node) throws IOException {
    response.setContentType("application/json");
    byte[] bytes = JSON.writeValueAsBytes(node);
    response.setContentLength(bytes.length);
    response.getOutputStream().write(bytes);
  }

  /**
   * The API's own problems, shaped as the filter's ({@link IdempotencyProblem}): {@code type},
   * {@code title}, {@code status}, {@code detail} and {@code instance}, the request's path.
   */
  private static void problem(HttpServletRequest request, HttpServletResponse response,
      int status, String type, String title, String detail) throws IOException {
    response.setStatus(status);
    response.setContentType(IdempotencyProblem.MEDIA_TYPE);
    byte[] bytes = JSON.writeValueAsBytes(JSON.createObjectNode()
        .put("type", "https://github.com/once-dev/once/blob/main/cli/README.md#" + type)
        .put("title", title)
        .put("status", status)
        .put("detail", detail)
        .put("instance", request.getRequestURI()));
    response.setContentLength(bytes.length);
    response.getOutputStream().write(bytes);
  }
}
