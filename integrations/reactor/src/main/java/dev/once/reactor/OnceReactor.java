package dev.once.reactor;

import dev.once.AsyncWork;
import dev.once.Codec;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.Once;
import dev.once.Result;
import dev.once.reactor.internal.MonoOutcomes;
import java.util.Objects;
import java.util.Optional;
import reactor.core.publisher.Mono;

/**
 * Once for Project Reactor: {@code Mono<T>} in, {@code Mono<T>} out. The same engine as
 * {@link Once#call}, through {@link Once#callAsync}: the claim, fencing, heartbeat, steps, waiting
 * for an original in progress, failure policy, replays, and every exception's meaning are those of
 * the blocking call.
 *
 * <pre>{@code
 * OnceReactor onceReactor = OnceReactor.of(once);
 * Mono<Receipt> receipt = onceReactor.execute(IdempotencyKey.of("payments.charge", request.id()),
 *     Fingerprint.of(request.body()), receiptCodec,
 *     attempt -> gateway.charge(request, attempt.key()));   // a Mono<Receipt>
 * }</pre>
 *
 * <ul>
 *   <li><b>Lazy, one call per subscription.</b> Nothing is claimed until the {@code Mono} returned
 *       is subscribed to; each subscription is one call of {@link Once#callAsync} (so
 *       {@code retry()} or a second subscriber makes another call, answered by the store as any
 *       duplicate is).
 *   <li><b>Empty is a result.</b> A work {@code Mono} that completes empty (a {@code Mono<Void>}
 *       too) is stored as an empty result and replayed to duplicates as an empty {@code Mono},
 *       never read as "not stored" nor run again. Outcomes are stored in the format of
 *       {@link #outcomeCodec}.
 *   <li><b>Errors</b> of the work's {@code Mono} (or thrown by {@link ReactiveWork#run}) are the
 *       work's failures, as a thrown exception is to {@link Once#call}: retryable ones release the
 *       key, terminal ones (by {@link dev.once.FailurePolicy}) are stored and replayed as
 *       {@link dev.once.ReplayedFailureException}. The subscriber gets the work's own exception,
 *       unwrapped; a duplicate gets what {@link Once#call} would throw.
 *   <li><b>Cancelling never loses an outcome.</b> Once subscribed, the call goes on whatever the
 *       subscriber does: cancelling it, before or after the claim, neither stops the claim nor
 *       cancels the work's {@code Mono} nor releases the key; the work runs to its end and its
 *       outcome is stored (or, if it never ends, the claim is held until the lease passes, as a
 *       blocked {@link Once#call} would hold it). Cancelling only stops the answer being delivered.
 *   <li><b>Threads.</b> Nothing here blocks the subscribing thread or the thread the work's
 *       {@code Mono} signals on: the claim, then storing the outcome, run on
 *       {@link Once.Builder#asyncExecutor}'s threads. The work's {@code Mono} is subscribed to on
 *       the thread that made the claim (the executor's), and the answer is signalled on the thread
 *       that completed the call (the executor's; the subscribing thread's when a quick answer, a
 *       replay say, was there before the subscription was in place): add
 *       {@code publishOn(scheduler)} after the call to go on elsewhere, {@code subscribeOn} inside
 *       the work to run it elsewhere.
 *   <li><b>Context.</b> The subscriber's Reactor {@code Context} is the work's {@code Mono}'s.
 * </ul>
 */
public final class OnceReactor {

  private final Once once;

  private OnceReactor(Once once) {
    this.once = once;
  }

  /** Reactive calls through {@code once} (its store, settings and executor). */
  public static OnceReactor of(Once once) {
    return new OnceReactor(Objects.requireNonNull(once, "once"));
  }

  /** The {@link Once} these calls go through. */
  public Once once() {
    return once;
  }

  /**
   * A {@code Mono} that, for each subscription, runs {@code work} once for {@code key} (or replays
   * its stored outcome) and emits its value; it completes empty when the work's {@code Mono} did.
   * The errors are those of {@link Once#call}, unwrapped.
   */
  public <T> Mono<T> execute(IdempotencyKey key, Fingerprint fingerprint, Codec<T> codec,
      ReactiveWork<T> work) {
    return call(key, fingerprint, codec, work).flatMap(r -> Mono.justOrEmpty(r.value()));
  }

  /**
   * As {@link #execute}, emitting the {@link Result} (always one, on success): whether it was
   * replayed, and the fencing token. Its {@link Result#value() value} is null when the work's
   * {@code Mono} completed empty (a {@code Mono} never emits null, so null always means empty).
   */
  public <T> Mono<Result<T>> call(IdempotencyKey key, Fingerprint fingerprint, Codec<T> codec,
      ReactiveWork<T> work) {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(fingerprint, "fingerprint");
    Objects.requireNonNull(codec, "codec");
    Objects.requireNonNull(work, "work");
    Codec<Optional<T>> stored = MonoOutcomes.codec(codec);
    return Mono.deferContextual(context -> {
      AsyncWork<Optional<T>> async = attempt -> {
        Mono<T> mono = work.run(attempt);
        if (mono == null) {
          throw new NullPointerException("the work of " + key + " returned no Mono");
        }
        return MonoOutcomes.stage(mono.contextWrite(context));
      };
      // suppressCancel: cancelling the subscriber leaves the call, and so the claim, alone.
      return Mono.fromFuture(once.callAsync(key, fingerprint, stored, async), true);
    }).map(MonoOutcomes::unwrap);
  }

  /**
   * How {@link #call} stores outcomes, around {@code codec}: a NUL and {@code om}, then a tag
   * byte, {@code e} for an empty result, or {@code v} followed by {@code codec}'s bytes for a value
   * (so a value that encodes to no bytes at all still replays as a value). Bytes that do not begin
   * so (stored by a blocking call with the plain codec) are refused, never read as a value. A blocking {@link Once#call} that shares keys with
   * reactive calls reads their outcomes with this codec.
   */
  public static <T> Codec<Optional<T>> outcomeCodec(Codec<T> codec) {
    return MonoOutcomes.codec(Objects.requireNonNull(codec, "codec"));
  }
}
