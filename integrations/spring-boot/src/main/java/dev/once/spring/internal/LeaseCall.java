package dev.once.spring.internal;

import dev.once.IdempotencyKey;
import org.aopalliance.intercept.MethodInvocation;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.util.ClassUtils;

/**
 * One lease-mode call of an {@code @Idempotent} method: whether the method itself returned, and
 * how the Spring transaction it ran in ended.
 *
 * <p>In lease mode the work Once runs is the rest of the proxy's chain, not the method alone:
 * advice after the method (the transaction's commit and its {@code afterCommit} callbacks,
 * return-value validation, any aspect) may throw once the method has returned. Whether that is a
 * failure of the work depends on the method's transaction:
 * <ul>
 *   <li>it rolled back (or its end is unknown): the method's writes are gone, so it is a failure
 *       of the work, retryable or terminal by the policy, as when the method throws;
 *   <li>it committed, or there was none, or it is the caller's and still open: the method's
 *       effects stand. Nothing that happens after the work returns may run it again: its value is
 *       stored (or, if it cannot be, the marker), and the exception is passed on to this caller
 *       only. Duplicates get the value.
 * </ul>
 * The outer interceptor makes one per call; the inner one, last before the method, reports the
 * return.
 */
final class LeaseCall {

  private static final Log LOG = LogFactory.getLog(LeaseCall.class);

  private static final boolean SPRING_TX = ClassUtils.isPresent(
      "org.springframework.transaction.support.TransactionSynchronizationManager",
      LeaseCall.class.getClassLoader());

  /** No transaction began and ended inside the chain after the method returned. */
  private static final int NOT_ENDED = -1;

  private final IdempotencyKey key;
  private volatile boolean returned;
  private volatile Object value;
  private volatile int transactionEnd = NOT_ENDED;
  private volatile Throwable afterReturn;
  /** Counts the returns, so a transaction of an earlier one (advice that re-invoked) is ignored. */
  private int returns;

  LeaseCall(IdempotencyKey key) {
    this.key = key;
  }

  /** The inner interceptor: the method returned {@code result}, inside whatever transaction. */
  void returned(Object result) {
    value = result;
    transactionEnd = NOT_ENDED;
    returned = true;
    int current = ++returns;
    if (SPRING_TX) {
      TransactionCompletion.watch(status -> {
        if (returns == current) {
          transactionEnd = status;
        }
      });
    }
  }

  /**
   * The work: the rest of the chain. An exception after the method returned, with its effects
   * standing, becomes {@link #afterReturn()} and the method's value is returned to Once.
   */
  Object run(MethodInvocation invocation) throws Exception {
    returned = false;
    afterReturn = null;
    try {
      return IdempotentSupport.proceed(invocation);
    } catch (Exception | Error e) {
      int end = transactionEnd;
      if (!returned || end == TransactionSynchronization.STATUS_ROLLED_BACK
          || end == TransactionSynchronization.STATUS_UNKNOWN) {
        throw e;
      }
      LOG.warn("the @Idempotent method for " + key + " returned, then " + e + " was thrown"
          + " after it (by other advice, or a transaction callback after the commit); the"
          + " method's effects stand, so its result is stored and it does not run again for this"
          + " key; the exception goes to this caller", e);
      afterReturn = e;
      return value;
    }
  }

  /** What was thrown after the method returned with its effects standing, or null. */
  Throwable afterReturn() {
    return afterReturn;
  }
}
