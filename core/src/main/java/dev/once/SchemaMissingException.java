package dev.once;

/**
 * The store is not set up: its table does not exist (a JDBC table, a DynamoDB table), or was made
 * by an earlier version and lacks what this one needs. A mistake of set-up, not an outage: calls keep failing until the schema is
 * created or upgraded, and the message names how. A {@link StoreUnavailableException} (nothing was
 * written), so code that handles store trouble keeps working.
 */
public class SchemaMissingException extends StoreUnavailableException {
  private static final long serialVersionUID = 1L;

  public SchemaMissingException(String message, Throwable cause) {
    super(message, cause, false);
  }
}
