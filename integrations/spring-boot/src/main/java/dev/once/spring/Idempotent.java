package dev.once.spring;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Runs the annotated bean method once per key: the first call with a key runs it and stores its
 * return value (as JSON); every later call with the same key returns the stored value without
 * running it. Works on any Spring bean method called through the bean (so also on
 * {@code @KafkaListener} and {@code @RabbitListener} methods), not on calls from within the same
 * object.
 *
 * <pre>{@code
 * @Idempotent(key = "#command.requestId")
 * @Transactional                                   // JDBC store: claim, SQL and outcome commit together
 * public Receipt debit(DebitCommand command) { ... }
 * }</pre>
 *
 * <p>The record's {@link dev.once.IdempotencyKey} is {@code (scope, tenant, key)}:
 * <ul>
 *   <li>{@link #key()}: a SpEL expression over the arguments, by name ({@code #command}) or
 *       position ({@code #a0}, {@code #p0}); its value's {@code toString()}, 1–255 printable ASCII;
 *   <li>{@link #tenant()}: a SpEL expression, or {@code ""} (one shared tenant) by default;
 *   <li>{@link #scope()}: a fixed name, by default {@code SimpleClassName.methodName}.
 * </ul>
 * The {@link #fingerprint()} (by default all arguments) tells a retry from a misuse: the same key
 * with other arguments throws {@link dev.once.KeyReusedException}.
 *
 * <p>A duplicate arriving while the original runs gets {@link dev.once.RequestInProgressException}
 * (or waits, with {@code once.in-progress-wait}); a stored terminal failure is replayed as
 * {@link dev.once.ReplayedFailureException}. With a JDBC store, a method that runs in a Spring
 * transaction on the store's DataSource (it is {@code @Transactional}, or is called inside one)
 * joins it: the claim, the method's SQL and the outcome commit or roll back together
 * (transactional mode). Otherwise the call runs in lease mode around the method and its
 * transaction.
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface Idempotent {

  /** SpEL over the arguments giving the client's or message's idempotency key; never null. */
  String key();

  /** SpEL over the arguments giving the tenant (caller); {@code ""}: one shared tenant. */
  String tenant() default "";

  /**
   * The operation's scope, 1–128 visible ASCII characters; {@code ""}: the class's simple name,
   * a dot and the method's name ({@code PaymentService.charge}). Give it a fixed name if the class
   * may be renamed: records are found by scope.
   */
  String scope() default "";

  /**
   * SpEL over the arguments giving what must be equal for a call to count as a retry; {@code ""}:
   * all arguments. The value is fingerprinted as canonical JSON (key order never matters), a
   * {@code byte[]} as its bytes. Use {@code "#record.value()"} for a Kafka record, or a constant
   * such as {@code "'-'"} to accept any arguments under one key.
   */
  String fingerprint() default "";

  /**
   * Exceptions that are terminal for this method: stored and replayed (as
   * {@link dev.once.ReplayedFailureException}) rather than released for a retry, in addition to the
   * {@code Once} bean's failure policy.
   */
  Class<? extends Throwable>[] terminalOn() default {};
}
