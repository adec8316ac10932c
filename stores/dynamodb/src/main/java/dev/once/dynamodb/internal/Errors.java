package dev.once.dynamodb.internal;

import dev.once.OnceException;
import dev.once.StoreUnavailableException;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.services.dynamodb.model.DynamoDbException;
import software.amazon.awssdk.services.dynamodb.model.ResourceNotFoundException;

/**
 * Turns what the SDK throws into the library's exceptions. The SDK has already retried throttling,
 * 5xx answers and I/O errors with backoff; what reaches here is final for this call.
 */
public final class Errors {

  private Errors() {}

  /** The cause of a failed future's exception. */
  public static Throwable unwrap(Throwable e) {
    Throwable t = e;
    while ((t instanceof CompletionException || t instanceof ExecutionException)
        && t.getCause() != null) {
      t = t.getCause();
    }
    return t;
  }

  /**
   * {@code e} as the exception to throw: the library's own and argument errors unchanged, anything
   * from DynamoDB or the SDK as {@link StoreUnavailableException}.
   */
  public static RuntimeException map(Throwable e, String table, String operation) {
    Throwable t = unwrap(e);
    if (t instanceof OnceException || t instanceof IllegalArgumentException
        || t instanceof IllegalStateException || t instanceof NullPointerException) {
      return (RuntimeException) t;
    }
    if (t instanceof ResourceNotFoundException) {
      return new StoreUnavailableException("DynamoDB table '" + table + "' does not exist (or is"
          + " not ACTIVE): create it with DynamoDbStore.createTable() or your infrastructure"
          + " code; " + operation + " failed", t);
    }
    if (t instanceof DynamoDbException d && d.awsErrorDetails() != null) {
      return new StoreUnavailableException("DynamoDB " + operation + " on table '" + table
          + "' failed: " + d.awsErrorDetails().errorCode() + ": "
          + d.awsErrorDetails().errorMessage(), t);
    }
    if (t instanceof SdkException) {
      return new StoreUnavailableException("DynamoDB " + operation + " on table '" + table
          + "' failed: " + t.getMessage(), t);
    }
    if (t instanceof RuntimeException r) {
      return r;
    }
    if (t instanceof Error err) {
      throw err;
    }
    return new StoreUnavailableException("DynamoDB " + operation + " failed: " + t, t);
  }

  /** Whether DynamoDB refused a write because the item would exceed its 400 KB limit. */
  public static boolean isItemTooLarge(Throwable e) {
    Throwable t = unwrap(e);
    return t instanceof DynamoDbException d && d.awsErrorDetails() != null
        && "ValidationException".equals(d.awsErrorDetails().errorCode())
        && d.awsErrorDetails().errorMessage() != null
        && d.awsErrorDetails().errorMessage().toLowerCase(java.util.Locale.ROOT)
            .contains("item size");
  }
}
