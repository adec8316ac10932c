package dev.once;

/**
 * The store is not set up: its table does not exist (a JDBC table, a DynamoDB table), or was made
 * by an earlier version and lacks what this one needs. A mistake of set-up, not an outage: calls keep failing until the schema is
 * created or upgraded, and the message names how. A {@link StoreUnavailableException} (nothing was
 * written), so code that handles store trouble keeps working.
 */
public class SchemaMissingException extends StoreUnavailableException {
  private static final long serialVersionUID = 1L;

  /** A set-up mistake found before anything was written. */
  public SchemaMissingException(String message, Throwable cause) {
    super(message, cause, false);
  }

  /**
   * A set-up mistake found by a call that may have written before it (an operation over many
   * records, some changed before the table went, or a retried write whose earlier attempt's
   * answer was lost): {@code mayHaveBeenApplied} as for {@link StoreUnavailableException}.
   */
  public SchemaMissingException(String message, Throwable cause, boolean mayHaveBeenApplied) {
    super(message, cause, mayHaveBeenApplied);
  }
}
