package dev.once.dynamodb.internal;

import dev.once.OnceException;
import dev.once.SchemaMissingException;
import dev.once.StoreUnavailableException;
import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.util.Locale;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.regex.Pattern;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.core.exception.SdkServiceException;
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
   * {@code e}, the failure of a write, as the exception to throw: the library's own and argument
   * errors unchanged, anything from DynamoDB or the SDK as {@link StoreUnavailableException}, with
   * {@link StoreUnavailableException#mayHaveBeenApplied} as {@link #mayHaveBeenApplied} says.
   */
  public static RuntimeException map(Throwable e, String table, String operation) {
    return map(e, table, operation, mayHaveBeenApplied(e));
  }

  /** As {@link #map}, for a call that writes nothing (a read): never applied. */
  public static RuntimeException mapRead(Throwable e, String table, String operation) {
    return map(e, table, operation, false);
  }

  /** As {@link #map}, with {@code applied} as the exception's mayHaveBeenApplied. */
  public static RuntimeException map(Throwable e, String table, String operation,
      boolean applied) {
    Throwable t = unwrap(e);
    if (t instanceof OnceException || t instanceof IllegalArgumentException
        || t instanceof IllegalStateException || t instanceof NullPointerException) {
      return (RuntimeException) t;
    }
    if (t instanceof ResourceNotFoundException) {
      // Set-up, not an outage (a table being created is caught here too; retrying is right
      // either way). This attempt wrote nothing, but an earlier one, or earlier records of a
      // scan, may have: applied says so.
      return new SchemaMissingException("DynamoDB table '" + table + "' does not exist (or is"
          + " not ACTIVE): create it with DynamoDbStore.createTable() or your infrastructure"
          + " code; " + operation + " failed", t, applied);
    }
    if (t instanceof DynamoDbException d && d.awsErrorDetails() != null) {
      return new StoreUnavailableException("DynamoDB " + operation + " on table '" + table
          + "' failed: " + d.awsErrorDetails().errorCode() + ": "
          + d.awsErrorDetails().errorMessage(), t, applied);
    }
    if (t instanceof SdkException) {
      return new StoreUnavailableException("DynamoDB " + operation + " on table '" + table
          + "' failed: " + t.getMessage(), t, applied);
    }
    if (t instanceof RuntimeException r) {
      return r;
    }
    if (t instanceof Error err) {
      throw err;
    }
    return new StoreUnavailableException("DynamoDB " + operation + " failed: " + t, t, applied);
  }

  /**
   * Whether a write that failed with {@code e} may have been applied. False only when every
   * attempt the SDK made is known to have changed nothing: DynamoDB answered it with a 4xx error
   * (validation, throttling, a missing table, a failed condition: refused before writing), or no
   * connection was made (refused, connect timeout, unknown host: the request never left). The SDK
   * keeps only the messages of the attempts before the last (as suppressed exceptions "Request
   * attempt N failure: ..."), so those are judged by their message; anything not recognised, a
   * timeout waiting for the answer, a 5xx (DynamoDB's InternalServerError leaves a write's fate
   * unknown) or a lost connection counts as possibly applied. A {@link StoreUnavailableException}
   * answers its own flag; the store's own refusals decided in Java on an answer (a lost lease, an
   * item that is not a record) wrote nothing.
   */
  public static boolean mayHaveBeenApplied(Throwable e) {
    Throwable t = unwrap(e);
    if (t instanceof StoreUnavailableException mapped) {
      return mapped.mayHaveBeenApplied();
    }
    if (t instanceof OnceException || t instanceof IllegalArgumentException
        || t instanceof IllegalStateException || t instanceof NullPointerException) {
      // Decided in Java, on an answer: a refusal (lost lease, an item that is not a record).
      return false;
    }
    if (!knownNotSent(t)) {
      return true;
    }
    if (!(t instanceof SdkException sdk)) {
      return false;
    }
    Integer attempts = sdk.numAttempts();
    int earlier = 0;
    for (Throwable s : t.getSuppressed()) {
      String message = s.getMessage();
      if (message != null && message.startsWith("Request attempt ")) {
        if (!knownNotSentMessage(message)) {
          return true;
        }
        earlier++;
      }
    }
    return attempts != null && earlier < attempts - 1;
  }

  private static boolean knownNotSent(Throwable t) {
    if (t instanceof SdkServiceException service) {
      int status = service.statusCode();
      return status >= 400 && status < 500 && status != 408;
    }
    for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
      if (c instanceof ConnectException || c instanceof UnknownHostException
          || c instanceof NoRouteToHostException
          || c.getClass().getSimpleName().endsWith("ConnectTimeoutException")
          || (c instanceof SocketTimeoutException && c.getMessage() != null
              && c.getMessage().toLowerCase(Locale.ROOT).contains("connect timed out"))) {
        return true;
      }
    }
    return false;
  }

  private static boolean knownNotSentMessage(String message) {
    String m = message.toLowerCase(Locale.ROOT);
    return CLIENT_ERROR.matcher(m).find() || m.contains("connection refused")
        || m.contains("connect timed out") || m.contains("no route to host");
  }

  /** "Status Code: 4xx" in a service exception's message, except 408 (a timeout). */
  private static final Pattern CLIENT_ERROR = Pattern.compile("status code: 4(?!08)\\d\\d");

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
