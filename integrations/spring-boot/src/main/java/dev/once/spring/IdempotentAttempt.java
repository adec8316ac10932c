package dev.once.spring;

import dev.once.Attempt;
import dev.once.spring.internal.attempt.CurrentAttempt;
import java.util.Optional;

/**
 * The {@link Attempt} of the {@link Idempotent} method running on this thread in lease mode, so the
 * method can pass {@link Attempt#key()} downstream, run {@linkplain Attempt#step durable steps} or
 * check {@link Attempt#ensureLease()} before an effect:
 *
 * <pre>{@code
 * @Idempotent(key = "#order.id")
 * public Receipt place(Order order) {
 *   Attempt attempt = IdempotentAttempt.current().orElseThrow();
 *   Charge charge = attempt.step("charge", chargeCodec, ref -> gateway.charge(order, ref));
 *   attempt.step("mail", Codecs.utf8(), ref -> mailer.send(order.email(), charge));
 *   return new Receipt(charge.id());
 * }
 * }</pre>
 *
 * Empty outside such a method, and in transactional mode (a method joining a JDBC transaction
 * needs no steps: its writes and the outcome commit together).
 */
public final class IdempotentAttempt {

  private IdempotentAttempt() {}

  /** The running attempt of the {@code @Idempotent} method on this thread, if any. */
  public static Optional<Attempt> current() {
    return Optional.ofNullable(CurrentAttempt.get());
  }
}
