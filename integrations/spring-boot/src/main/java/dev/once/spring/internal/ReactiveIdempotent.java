package dev.once.spring.internal;

import dev.once.Codec;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.Once;
import dev.once.reactor.OnceReactor;
import dev.once.spring.internal.attempt.CurrentAttempt;
import java.lang.reflect.Method;
import org.aopalliance.intercept.MethodInvocation;
import org.springframework.aop.ProxyMethodInvocation;
import reactor.core.publisher.Mono;

/**
 * {@link dev.once.spring.Idempotent} methods returning {@code Mono<T>}, run through once-reactor.
 * Loaded only when once-reactor and Reactor are present ({@link IdempotentSupport} checks), so the
 * starter's other classes never name a Reactor type.
 *
 * <p>The method is invoked (the rest of the proxy's advice, then the target) only once the key is
 * claimed, on the executor's thread that claimed it, with {@link CurrentAttempt} set while it
 * builds its {@code Mono}; its {@code Mono} is the work. Each subscription is one call: a
 * resubscription ({@code retry()}) that claims the key again invokes the method again, through a
 * fresh copy of the invocation.
 */
final class ReactiveIdempotent {

  private ReactiveIdempotent() {}

  /** The {@code Mono} the proxy returns for one invocation. */
  @SuppressWarnings("unchecked")
  static Object call(Once once, Codec<Object> codec, IdempotencyKey key, Fingerprint fingerprint,
      MethodInvocation invocation, boolean serverErrorsNotStored, Method invoked) {
    // The invocation as it stands at this advice: each run proceeds through a copy of it.
    MethodInvocation pristine = invocation instanceof ProxyMethodInvocation proxied
        ? proxied.invocableClone() : invocation;
    Object request = ReplayMarker.currentRequest();
    return OnceReactor.of(once).call(key, fingerprint, codec, attempt -> {
      MethodInvocation run = pristine instanceof ProxyMethodInvocation proxied
          ? proxied.invocableClone() : pristine;
      Mono<Object> returned = (Mono<Object>) CurrentAttempt.with(attempt,
          () -> IdempotentSupport.proceed(run));
      if (returned == null || !serverErrorsNotStored) {
        return returned;
      }
      // A 5xx ResponseEntity is released for a retry, not stored, as for a blocking method.
      return returned.map(value -> ServerErrorNotStored.check(value, false));
    })
        .flatMap(result -> Mono.justOrEmpty(result.replayed()
            ? ReplayMarker.marked(result.value(), invoked, request) : result.value()))
        .onErrorResume(ServerErrorNotStored.class, notStored -> Mono.just(notStored.response()));
  }

  /** A {@code Mono} failing with {@code error}: what failed before the call could be made. */
  static Object error(Throwable error) {
    return Mono.error(error);
  }
}
