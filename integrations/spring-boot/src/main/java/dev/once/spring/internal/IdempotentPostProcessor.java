package dev.once.spring.internal;

import dev.once.spring.Idempotent;
import java.lang.reflect.Method;
import org.springframework.aop.Advisor;
import org.springframework.aop.Pointcut;
import org.springframework.aop.framework.Advised;
import org.springframework.aop.framework.autoproxy.AbstractBeanFactoryAwareAdvisingPostProcessor;
import org.springframework.aop.support.AopUtils;
import org.springframework.aop.support.DefaultPointcutAdvisor;
import org.springframework.aop.support.annotation.AnnotationMatchingPointcut;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.core.Ordered;
import org.springframework.util.ReflectionUtils;

/**
 * Proxies every bean with an {@link Idempotent} method (or adds to its existing proxy) with the two
 * {@link IdempotentInterceptor}s: the outer one first in the chain, the inner one last. Runs after
 * the auto-proxy creator (so a {@code @Transactional} bean's proxy already exists) and before the
 * Kafka and Rabbit listener post-processors (so listener containers call the proxy). Every
 * annotated method is checked when its bean is proxied: a bad expression fails the startup.
 */
public final class IdempotentPostProcessor extends AbstractBeanFactoryAwareAdvisingPostProcessor {

  private static final long serialVersionUID = 1L;

  private transient Advisor inner;
  private transient IdempotentSupport support;

  /** The post-processor; the Once bean is looked up on the first call, never earlier. */
  public IdempotentPostProcessor() {
    setProxyTargetClass(true);
    setBeforeExistingAdvisors(true);
    // Before the listener post-processors of Spring Kafka and Spring AMQP (lowest precedence).
    setOrder(Ordered.LOWEST_PRECEDENCE - 100);
  }

  @Override
  public void setBeanFactory(BeanFactory beanFactory) {
    super.setBeanFactory(beanFactory);
    if (!(beanFactory instanceof ListableBeanFactory listable)) {
      throw new IllegalStateException("@Idempotent needs a ListableBeanFactory");
    }
    this.support = new IdempotentSupport(listable);
    Pointcut pointcut = new AnnotationMatchingPointcut(null, Idempotent.class, true);
    this.advisor = new DefaultPointcutAdvisor(pointcut,
        new IdempotentInterceptor(IdempotentInterceptor.Position.OUTER, support));
    this.inner = new DefaultPointcutAdvisor(pointcut,
        new IdempotentInterceptor(IdempotentInterceptor.Position.INNER, support));
  }

  @Override
  public Object postProcessAfterInitialization(Object bean, String beanName) {
    Object result = super.postProcessAfterInitialization(bean, beanName);
    if (result instanceof Advised advised && advised.indexOf(advisor) >= 0
        && advised.indexOf(inner) < 0) {
      advised.addAdvisor(inner);
      Class<?> targetClass = AopUtils.getTargetClass(result);
      // Parse every annotated method now, so that a mistake fails the startup, not the first call.
      ReflectionUtils.doWithMethods(targetClass, (Method m) -> support.method(m, targetClass),
          m -> m.isAnnotationPresent(Idempotent.class));
    }
    return result;
  }
}
