package dev.once.examples.payments;

import dev.once.Attempt;
import dev.once.ReplayedFailureException;
import dev.once.servlet.IdempotencyFilter;
import jakarta.servlet.http.HttpServletRequest;
import java.net.URI;
import java.util.Map;
import org.springframework.http.HttpStatus;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;

/** {@code POST /charges} and {@code GET /wallets/{id}}. */
@RestController
public class ChargeController {

  private final Wallets wallets;

  public ChargeController(Wallets wallets) {
    this.wallets = wallets;
  }

  /**
   * Charges a wallet. The Once filter runs this at most once per {@code Idempotency-Key} (a retry
   * gets the stored response); the wallet is debited under the attempt's stable downstream key, so
   * that even a re-run after a crash replays the committed charge instead of debiting again.
   */
  @PostMapping("/charges")
  public ResponseEntity<?> charge(@RequestBody ChargeRequest request,
      HttpServletRequest http) {
    if (request.wallet() == null || request.amount() <= 0) {
      return ResponseEntity.badRequest().body(ProblemDetail.forStatusAndDetail(
          HttpStatus.BAD_REQUEST, "wallet and a positive amount are required"));
    }
    if (wallets.balance(request.wallet()) == null) {
      return ResponseEntity.status(HttpStatus.NOT_FOUND).body(ProblemDetail.forStatusAndDetail(
          HttpStatus.NOT_FOUND, "no wallet " + request.wallet()));
    }
    // The filter protects /charges/**, so there is always an attempt here.
    Attempt attempt = IdempotencyFilter.attempt(http).orElseThrow();
    try {
      Charge charge = wallets.charge(attempt.key(), request);
      return ResponseEntity.created(URI.create("/charges/" + charge.id())).body(charge);
    } catch (InsufficientFundsException | ReplayedFailureException e) {
      // A 4xx response: the filter stores it and replays it to retries of this key.
      return ResponseEntity.status(HttpStatus.PAYMENT_REQUIRED).body(ProblemDetail
          .forStatusAndDetail(HttpStatus.PAYMENT_REQUIRED, "insufficient funds"));
    }
  }

  /** A wallet's balance. */
  @GetMapping("/wallets/{id}")
  public ResponseEntity<?> wallet(@PathVariable String id) {
    Long balance = wallets.balance(id);
    return balance == null ? ResponseEntity.notFound().build()
        : ResponseEntity.ok(Map.of("id", id, "balance", balance));
  }
}
