package dev.once.spi;

import dev.once.IdempotencyKey;
import dev.once.PayloadTooLargeException;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * One final outcome to store in a batch ({@link IdempotencyStore#completeAll}): the same three
 * arguments as {@link IdempotencyStore#complete} takes for one key.
 *
 * @param key     the key whose record is IN_PROGRESS under {@code token}
 * @param token   the caller's fencing token
 * @param outcome the outcome to store
 */
public record Completion(IdempotencyKey key, long token, Outcome outcome) {

  public Completion {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(outcome, "outcome");
  }

  /**
   * Checks a batch before anything of it is written, as every {@link IdempotencyStore#completeAll}
   * does first.
   *
   * @throws NullPointerException      if the list or one of its completions is null
   * @throws IllegalArgumentException  if two completions are for the same key
   * @throws PayloadTooLargeException if an outcome is larger than {@code maxPayloadBytes}
   */
  public static void checkBatch(List<Completion> completions, int maxPayloadBytes) {
    Objects.requireNonNull(completions, "completions");
    Set<IdempotencyKey> keys = new HashSet<>();
    for (int i = 0; i < completions.size(); i++) {
      Completion c = Objects.requireNonNull(completions.get(i), "completion " + i);
      if (!keys.add(c.key())) {
        throw new IllegalArgumentException("two completions for " + c.key()
            + " in one batch; a key is completed once");
      }
      if (c.outcome().size() > maxPayloadBytes) {
        throw new PayloadTooLargeException("outcome of " + c.key(), c.outcome().size(),
            maxPayloadBytes);
      }
    }
  }
}
