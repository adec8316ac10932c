package dev.once.spring.internal;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.once.Codec;
import dev.once.FailurePolicy;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.spring.internal.attempt.CurrentAttempt;
import dev.once.Once;
import dev.once.Result;
import dev.once.jdbc.JdbcStore;
import dev.once.jdbc.TransactionalOnce;
import dev.once.spring.OnceProperties;
import java.lang.reflect.Method;
import java.lang.reflect.UndeclaredThrowableException;
import java.sql.Connection;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import javax.sql.DataSource;
import org.aopalliance.intercept.MethodInvocation;
import org.springframework.aop.ProxyMethodInvocation;
import org.springframework.aop.support.AopUtils;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.config.ConfigurableBeanFactory;
import org.springframework.util.ClassUtils;

/**
 * What the two {@link IdempotentInterceptor}s share: the {@code Once} bean (looked up on first
 * use, so that post-processing beans never creates the store early), each method's metadata, and
 * the choice between lease mode and joining the Spring transaction.
 *
 * <p>Why two interceptors: in lease mode the claim must come before the method's transaction
 * begins and the outcome after it commits (else a commit failure would leave a stored outcome
 * for writes that never happened), so that interceptor sits outside the transaction interceptor.
 * Joining the transaction needs the opposite: the claim on the transaction's connection, inside
 * it. The outer interceptor decides; the inner one runs the joined call.
 */
final class IdempotentSupport {

  private static final ClassLoader LOADER = IdempotentSupport.class.getClassLoader();
  private static final boolean SPRING_JDBC =
      ClassUtils.isPresent("org.springframework.jdbc.datasource.DataSourceUtils", LOADER)
          && ClassUtils.isPresent(
              "org.springframework.transaction.support.TransactionSynchronizationManager", LOADER);

  /** Invocation attribute set by the outer interceptor when the inner one is to join. */
  static final String JOIN = IdempotentSupport.class.getName() + ".join";
  /** Invocation attribute: the {@link LeaseCall} the inner interceptor reports the return to. */
  static final String LEASE = IdempotentSupport.class.getName() + ".lease";

  private final ListableBeanFactory beans;
  /** Whether once-reactor and Reactor are present: then {@code Mono<T>} methods run through it. */
  private final boolean reactive;
  private final Map<Method, IdempotentMethod> methods = new ConcurrentHashMap<>();
  private final Map<IdempotentMethod, Runners> runners = new ConcurrentHashMap<>();
  private volatile Context context;

  IdempotentSupport(ListableBeanFactory beans) {
    this.beans = beans;
    ClassLoader loader = beans instanceof ConfigurableBeanFactory configurable
        && configurable.getBeanClassLoader() != null ? configurable.getBeanClassLoader() : LOADER;
    this.reactive = ClassUtils.isPresent("dev.once.reactor.OnceReactor", loader)
        && ClassUtils.isPresent("reactor.core.publisher.Mono", loader);
  }

  /** The method's metadata (parsed once), or null if it is not @Idempotent. */
  IdempotentMethod method(Method method, Class<?> targetClass) {
    Method specific = AopUtils.getMostSpecificMethod(method, targetClass);
    IdempotentMethod cached = methods.get(specific);
    if (cached != null) {
      return cached;
    }
    IdempotentMethod parsed = IdempotentMethod.of(specific, ClassUtils.getUserClass(targetClass),
        reactive);
    if (parsed != null) {
      methods.putIfAbsent(specific, parsed);
    }
    return parsed;
  }

  /** Whether this call should join the Spring transaction on the store's DataSource. */
  boolean joinsTransaction(MethodInvocation invocation, Class<?> targetClass) {
    Context c = context();
    return c.transactions != null && c.transactions.willRunInTransaction(
        AopUtils.getMostSpecificMethod(invocation.getMethod(), targetClass), targetClass);
  }

  /**
   * Lease mode: claim, run the rest of the chain (the transaction included), complete. What the
   * chain throws after the method returned, with the method's effects standing, is passed on to
   * the caller once the value is stored: see {@link LeaseCall}.
   */
  Object lease(IdempotentMethod method, MethodInvocation invocation) throws Exception {
    Context c = context();
    Object[] args = invocation.getArguments();
    IdempotencyKey key = method.key(invocation.getThis(), args, beans);
    Fingerprint fingerprint = method.fingerprint(invocation.getThis(), args, beans, c.mapper);
    Runners r = runners(method, c);
    LeaseCall call = new LeaseCall(key);
    if (invocation instanceof ProxyMethodInvocation proxied) {
      proxied.setUserAttribute(LEASE, call);
    }
    boolean entity = method.returnsEntity();
    boolean storeServerErrors = c.properties.getHttp().isStoreServerErrors();
    Object value;
    try {
      value = replayMarked(r.once.call(key, fingerprint, r.codec,
          attempt -> CurrentAttempt.with(attempt, () -> {
            Object returned = call.run(invocation);
            return entity ? ServerErrorNotStored.check(returned, storeServerErrors) : returned;
          })), invocation.getMethod());
    } catch (ServerErrorNotStored notStored) {
      value = notStored.response(); // answered as it is, the key released for a retry
    } catch (Throwable t) {
      Throwable after = call.afterReturn();
      if (after != null && after != t) {
        t.addSuppressed(after);
      }
      throw t;
    }
    Throwable after = call.afterReturn();
    if (after instanceof Error error) {
      throw error;
    }
    if (after != null) {
      throw (Exception) after;
    }
    return value;
  }

  /**
   * A method returning {@code Mono<T>}: the key and fingerprint of this invocation's arguments,
   * and a {@code Mono} that makes the call through once-reactor on each subscription, in lease
   * mode (a thread-bound transaction cannot span a {@code Mono}). What fails before that (no
   * key, say) is the {@code Mono}'s error.
   */
  Object reactive(IdempotentMethod method, MethodInvocation invocation) {
    try {
      Context c = context();
      Object[] args = invocation.getArguments();
      IdempotencyKey key = method.key(invocation.getThis(), args, beans);
      Fingerprint fingerprint = method.fingerprint(invocation.getThis(), args, beans, c.mapper);
      Runners r = runners(method, c);
      return ReactiveIdempotent.call(r.once, r.codec, key, fingerprint, invocation,
          method.returnsEntity() && !c.properties.getHttp().isStoreServerErrors(),
          method.method());
    } catch (RuntimeException e) {
      return ReactiveIdempotent.error(e);
    }
  }

  /**
   * Transactional mode, inside the Spring transaction: the claim, the method's SQL and the outcome
   * on the transaction's connection, committed (or rolled back) by Spring. Falls back to lease
   * mode if no transaction is active on the store's DataSource after all.
   */
  Object join(IdempotentMethod method, MethodInvocation invocation) throws Exception {
    Context c = context();
    Object[] args = invocation.getArguments();
    IdempotencyKey key = method.key(invocation.getThis(), args, beans);
    Fingerprint fingerprint = method.fingerprint(invocation.getThis(), args, beans, c.mapper);
    Runners r = runners(method, c);
    return c.transactions.inTransaction(connection -> replayMarked(connection == null
        ? r.once.call(key, fingerprint, r.codec,
            attempt -> CurrentAttempt.with(attempt, () -> proceed(invocation)))
        : r.transactional.callInTransaction(connection, key, fingerprint, r.codec,
            tx -> proceed(invocation)), invocation.getMethod()));
  }

  /** The value, marked as a replay when it is one and answers the request ({@link ReplayMarker}). */
  private static Object replayMarked(Result<Object> result, Method invoked) {
    return result.replayed() ? ReplayMarker.marked(result.value(), invoked) : result.value();
  }

  static Object proceed(MethodInvocation invocation) throws Exception {
    try {
      return invocation.proceed();
    } catch (Exception | Error e) {
      throw e;
    } catch (Throwable t) {
      throw new UndeclaredThrowableException(t);
    }
  }

  private Runners runners(IdempotentMethod method, Context c) {
    return runners.computeIfAbsent(method, m -> Runners.of(m, c));
  }

  private Context context() {
    Context c = context;
    if (c == null) {
      synchronized (this) {
        c = context;
        if (c == null) {
          c = new Context(beans);
          context = c;
        }
      }
    }
    return c;
  }

  /** The beans a call needs, looked up once, on the first call. */
  private static final class Context {
    final Once once;
    final ObjectMapper mapper;
    final OnceProperties properties;
    final SpringTransactions transactions;

    Context(ListableBeanFactory beans) {
      this.once = beans.getBean(Once.class);
      this.mapper = beans.getBeanProvider(ObjectMapper.class)
          .getIfUnique(JsonCodecs::defaultMapper);
      this.properties = beans.getBeanProvider(OnceProperties.class)
          .getIfAvailable(OnceProperties::new);
      DataSource dataSource = once.store() instanceof JdbcStore && SPRING_JDBC
          ? StoreFactory.dataSource(beans) : null;
      this.transactions = dataSource == null ? null
          : new SpringTransactions(dataSource, beans);
    }
  }

  /** The Once (and TransactionalOnce) for one method, with its terminal exceptions, and its codec. */
  private record Runners(Once once, TransactionalOnce transactional, Codec<Object> codec) {
    static Runners of(IdempotentMethod method, Context c) {
      Once.Config config = c.once.config();
      FailurePolicy declared = method.terminalOn().length == 0 ? config.failurePolicy()
          : config.failurePolicy().terminalOn(method.terminalOn());
      // A server error answered by a ResponseEntity is released, as the filter does, whatever
      // the policy says of exceptions.
      FailurePolicy policy = !method.returnsEntity() ? declared : FailurePolicy.retryAll()
          .terminalIf(t -> !(t instanceof ServerErrorNotStored) && declared.isTerminal(t));
      Once once = policy == config.failurePolicy() ? c.once : copy(c.once, policy);
      TransactionalOnce transactional = null;
      if (c.transactions != null) {
        transactional = TransactionalOnce.builder((JdbcStore) config.store())
            .retention(config.retention())
            .failurePolicy(policy)
            .clock(config.clock())
            .maxPayloadBytes(config.maxPayloadBytes())
            .lockWait(c.properties.getJdbc().getLockWait())
            .listener(config.listener())
            .build();
      }
      return new Runners(once, transactional, method.codec(c.mapper));
    }

    private static Once copy(Once once, FailurePolicy policy) {
      return once.toBuilder().failurePolicy(policy).build();
    }
  }

  /** Runs work on the connection of the current Spring transaction. */
  @FunctionalInterface
  interface ConnectionWork {
    /** {@code connection} is the transaction's, or null if none is active on the DataSource. */
    Object run(Connection connection) throws Exception;
  }
}
