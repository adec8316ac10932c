package dev.once.reactor;

import dev.once.Attempt;
import reactor.core.publisher.Mono;

/**
 * The business logic of {@link OnceReactor#call}: returns the {@link Mono} of the work, which
 * {@code OnceReactor} subscribes to once the key is claimed. A failure thrown here, before any
 * {@code Mono} is returned, is the work's failure as if the {@code Mono} had signalled it.
 *
 * <p>Called on the thread that made the claim, one of {@link dev.once.Once.Builder#asyncExecutor}'s,
 * and the {@code Mono} is subscribed to on that thread: move blocking or heavy work elsewhere with
 * {@code subscribeOn}. {@link Attempt#step durable steps}, {@link Attempt#checkpoint checkpoints}
 * and {@link Attempt#ensureLease} write to the store and block while they do: call them here
 * (this thread may block) or on a thread that may, never on a non-blocking Reactor thread.
 *
 * @param <T> the result type
 */
@FunctionalInterface
public interface ReactiveWork<T> {

  /** Starts nothing yet: returns the work as a {@code Mono}, subscribed to once. */
  Mono<T> run(Attempt attempt) throws Exception;
}
