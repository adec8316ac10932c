package dev.once.spring.internal;

import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.springframework.aop.ProxyMethodInvocation;
import org.springframework.aop.support.AopUtils;

/**
 * Runs {@link dev.once.spring.Idempotent} methods through Once. Two instances sit on each proxy:
 * the {@linkplain Position#OUTER outer} one before every other advice (the transaction's
 * included) runs lease mode, or marks the call for the {@linkplain Position#INNER inner} one,
 * after every other advice, to join the transaction. In lease mode the inner one reports that the
 * method returned ({@link LeaseCall}). See {@link IdempotentSupport}.
 */
final class IdempotentInterceptor implements MethodInterceptor {

  /** Where on the proxy's chain of advice the interceptor sits. */
  enum Position { OUTER, INNER }

  private final Position position;
  private final IdempotentSupport support;

  IdempotentInterceptor(Position position, IdempotentSupport support) {
    this.position = position;
    this.support = support;
  }

  @Override
  public Object invoke(MethodInvocation invocation) throws Throwable {
    Object target = invocation.getThis();
    Class<?> targetClass = target == null
        ? invocation.getMethod().getDeclaringClass() : AopUtils.getTargetClass(target);
    IdempotentMethod method = support.method(invocation.getMethod(), targetClass);
    if (method == null) {
      return invocation.proceed();
    }
    if (position == Position.OUTER) {
      if (method.reactive()) {
        return support.reactive(method, invocation);
      }
      if (invocation instanceof ProxyMethodInvocation proxied
          && support.joinsTransaction(invocation, targetClass)) {
        proxied.setUserAttribute(IdempotentSupport.JOIN, Boolean.TRUE);
        return invocation.proceed();
      }
      return support.lease(method, invocation);
    }
    if (invocation instanceof ProxyMethodInvocation proxied) {
      if (Boolean.TRUE.equals(proxied.getUserAttribute(IdempotentSupport.JOIN))) {
        proxied.setUserAttribute(IdempotentSupport.JOIN, null);
        return support.join(method, invocation);
      }
      if (proxied.getUserAttribute(IdempotentSupport.LEASE) instanceof LeaseCall call) {
        // Lease mode: tell the outer interceptor the method itself returned, so that what the
        // advice between them throws afterwards is not taken for a failure of the method.
        Object value = invocation.proceed();
        call.returned(value);
        return value;
      }
    }
    return invocation.proceed();
  }
}
