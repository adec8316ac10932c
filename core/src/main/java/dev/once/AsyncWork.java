package dev.once;

import java.util.concurrent.CompletionStage;

/**
 * The business logic of {@link Once#callAsync}: starts the work and returns the stage that
 * completes with its value (or its failure), without blocking. A failure thrown here, before any
 * stage is returned, is the work's failure as if the stage had completed with it.
 *
 * <p>Everything an {@link Attempt} offers works, with one care: {@link Attempt#step durable
 * steps}, {@link Attempt#checkpoint checkpoints} and {@link Attempt#ensureLease} write to the store
 * and block while they do, so call them from a thread that may block (not an event loop), one at a
 * time.
 *
 * @param <T> the result type
 */
@FunctionalInterface
public interface AsyncWork<T> {
  CompletionStage<T> run(Attempt attempt) throws Exception;
}
