package dev.once.cli;

import dev.once.StoreUnavailableException;
import dev.once.cli.store.StoreOption;
import dev.once.cli.store.StoreUris.OpenStore;
import dev.once.cli.store.StoreUris.StoreUri;
import dev.once.cli.store.StoreUris;
import dev.once.cli.support.CommandFailure;
import dev.once.jdbc.JdbcDialect;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code once schema}: prints the DDL of a SQL store, as {@code JdbcStore.createSchema()} applies
 * it and as a migration tool (Flyway, Liquibase) can take it; with {@code --apply}, applies it.
 * Printing touches nothing: it needs only the dialect, which the URI names.
 */
@Command(name = "schema", mixinStandardHelpOptions = true, version = "0.1.0-SNAPSHOT",
    sortOptions = false, showDefaultValues = true,
    header = "Prints or applies the DDL of a SQL store.",
    description = {
        "Prints the store's migrations for its dialect, without connecting: V1 creates the table "
            + "and its indexes (IF NOT EXISTS), V2 adds the claim_id column to a table made by V1, "
            + "and on PostgreSQL V3 adds purge_after and its index in place of the expiry index "
            + "(completions become HOT updates).",
        "With --apply, connects and applies what is missing (an up-to-date table is left alone); "
            + "running it twice is harmless.",
        "Exit code 0 on success; 2 for bad options, a store without a SQL schema, or a store that "
            + "cannot be reached."})
final class SchemaCommand implements Callable<Integer> {

  @Spec
  CommandSpec spec;

  @Mixin
  StoreOption store;

  @Option(names = "--apply", description = "Connect and create the table and indexes if missing.")
  boolean apply;

  /** DynamoDB has no DDL to print: describe the table, and with --apply create it. */
  private Integer dynamoDb(StoreUri uri) {
    PrintWriter out = spec.commandLine().getOut();
    try (OpenStore opened = store.open(1)) {
      if (!apply) {
        out.println("DynamoDB table " + ((dev.once.dynamodb.DynamoDbStore) opened.store()).table()
            + ": string partition key, on-demand billing, TTL on the expiry attribute. "
            + "--apply creates it (or checks an existing one).");
      } else {
        opened.createSchema();
        out.println("Table ready: " + opened.describe());
      }
      out.flush();
      return 0;
    } catch (StoreUnavailableException | IllegalStateException e) {
      throw new CommandFailure(CommandFailure.CANNOT_RUN, "could not create the table at "
          + uri.display() + ": " + StoreUris.causeMessage(e));
    }
  }

  @Override
  public Integer call() {
    StoreUri uri = store.uri();
    JdbcDialect dialect = uri.kind().dialect();
    if (uri.kind() == StoreUris.Kind.DYNAMODB) {
      return dynamoDb(uri);
    }
    if (dialect == null) {
      throw new ParameterException(spec.commandLine(), "the store " + uri.display()
          + " has no schema (schema applies to sqlite:, postgres:, mariadb:, jdbc: and dynamodb: "
          + "stores)");
    }
    String ddl;
    try {
      ddl = dialect.schema(store.table());
    } catch (IllegalArgumentException e) {
      throw new ParameterException(spec.commandLine(), "--table: " + e.getMessage());
    }
    PrintWriter out = spec.commandLine().getOut();
    if (!apply) {
      out.print(ddl.endsWith("\n") ? ddl : ddl + "\n");
      out.flush();
      return 0;
    }
    try (OpenStore opened = store.open(1)) {
      opened.createSchema();
      out.println("Schema applied: " + opened.describe());
      out.flush();
      return 0;
    } catch (StoreUnavailableException e) {
      throw new CommandFailure(CommandFailure.CANNOT_RUN, "could not apply the schema at "
          + uri.display() + ": " + StoreUris.causeMessage(e));
    }
  }
}
