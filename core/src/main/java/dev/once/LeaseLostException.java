package dev.once;

/**
 * The caller no longer owns the key: its lease passed and another worker took over (a higher
 * fencing token), or the record was reaped or purged. The write was refused and nothing changed.
 * Any side effect already made must be deduplicated downstream by {@link Attempt#key()}.
 */
public class LeaseLostException extends OnceException {
  private static final long serialVersionUID = 1L;

  private final transient IdempotencyKey key;
  private final long token;

  public LeaseLostException(IdempotencyKey key, long token) {
    super("lease on " + key + " with fencing token " + token + " was lost to another worker");
    this.key = key;
    this.token = token;
  }

  public IdempotencyKey key() {
    return key;
  }

  /** The stale token that was refused. */
  public long token() {
    return token;
  }
}
