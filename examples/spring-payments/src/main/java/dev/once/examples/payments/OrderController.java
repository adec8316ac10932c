package dev.once.examples.payments;

import dev.once.Attempt;
import dev.once.ReplayedFailureException;
import dev.once.spring.Idempotent;
import dev.once.spring.IdempotentAttempt;
import java.net.URI;
import org.springframework.http.HttpStatus;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RestController;

/**
 * {@code POST /orders}: places an order once per {@code Idempotency-Key} (the recipe of
 * docs/first-project.md, section 3: {@code @Idempotent} on the handler method, keyed on the
 * header). A retry gets the stored 201, {@code Location} and body with
 * {@code Idempotent-Replayed: true}; the order runs as the {@link Checkout} saga.
 */
@RestController
public class OrderController {

  private static final URI ORDER_REFUSED = URI.create("/problems/order-refused");

  private final Checkout checkout;

  public OrderController(Checkout checkout) {
    this.checkout = checkout;
  }

  /** Places an order. */
  @PostMapping("/orders")
  @Idempotent(key = "#key", scope = "orders")
  public ResponseEntity<OrderReceipt> place(
      @RequestHeader(name = "Idempotency-Key", required = false) String key,
      @RequestBody Order order) {
    Attempt attempt = IdempotentAttempt.current().orElseThrow();
    OrderReceipt receipt = checkout.place(attempt, order);
    return ResponseEntity.created(URI.create("/orders/" + receipt.reservation())).body(receipt);
  }

  /** The order failed for good: its steps done were undone (refunded, released). */
  @ExceptionHandler({OutOfStockException.class, InsufficientFundsException.class,
      UndeliverableException.class})
  ResponseEntity<ProblemDetail> refused(RuntimeException e) {
    return ResponseEntity.unprocessableContent().body(refusal(e.getMessage()));
  }

  /**
   * A retry of an order that failed for good gets the same answer, marked as a replay. (Without
   * this handler the starter answers a replayed failure 500 {@code idempotency-original-failed}.)
   */
  @ExceptionHandler
  ResponseEntity<ProblemDetail> refusedBefore(ReplayedFailureException e) {
    return ResponseEntity.unprocessableContent().header("Idempotent-Replayed", "true")
        .body(refusal(e.failureMessage()));
  }

  private static ProblemDetail refusal(String detail) {
    ProblemDetail problem = ProblemDetail.forStatusAndDetail(HttpStatus.UNPROCESSABLE_CONTENT,
        detail);
    problem.setType(ORDER_REFUSED);
    problem.setTitle("Order refused");
    return problem;
  }
}
