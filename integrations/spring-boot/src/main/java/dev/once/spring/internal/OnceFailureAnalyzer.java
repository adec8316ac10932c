package dev.once.spring.internal;

import dev.once.SchemaMissingException;
import dev.once.StoreUnavailableException;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.diagnostics.FailureAnalyzer;
import org.springframework.core.Ordered;

/**
 * Turns a startup that failed because of Once into one description and one action, instead of the
 * nested bean creation exceptions around it: an {@link OnceStartupException} (the starter knows
 * what it was doing), or else a {@link StoreUnavailableException} thrown by an application's own
 * bean (a store whose schema it creates while the database is down). Registered in
 * {@code META-INF/spring.factories}; ordered first, since it only answers for Once's exceptions.
 */
public final class OnceFailureAnalyzer implements FailureAnalyzer, Ordered {

  @Override
  public FailureAnalysis analyze(Throwable failure) {
    OnceStartupException ours = find(failure, OnceStartupException.class);
    if (ours != null) {
      return new FailureAnalysis(ours.getMessage(), ours.action(), ours);
    }
    StoreUnavailableException store = find(failure, StoreUnavailableException.class);
    if (store == null) {
      return null;
    }
    if (store instanceof SchemaMissingException) {
      return new FailureAnalysis("Once's idempotency store is not set up: " + store.getMessage(),
          "Create or upgrade its table (JdbcStore.createSchema(), once.jdbc.create-schema=true,"
              + " or JdbcDialect.X.schema(table) in your migrations; for DynamoDB,"
              + " DynamoDbStore.createTable() or your infrastructure code) and start again.",
          store);
    }
    return new FailureAnalysis("Once's idempotency store could not be reached while the"
        + " application started: " + store.getMessage(),
        "Start the store (database or Redis) and check its connection settings, or let the"
            + " application start without it: call nothing on the store while beans are made"
            + " (JdbcStore.builder(dataSource).build() never connects; name its dialect with"
            + " .dialect(...) and create the schema with your migrations). Until the store is"
            + " back, calls fail with StoreUnavailableException (HTTP 503).", store);
  }

  @Override
  public int getOrder() {
    return Ordered.HIGHEST_PRECEDENCE;
  }

  private static <T extends Throwable> T find(Throwable failure, Class<T> type) {
    for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (type.isInstance(t)) {
        return type.cast(t);
      }
    }
    return null;
  }
}
