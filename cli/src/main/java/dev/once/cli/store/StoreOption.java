package dev.once.cli.store;

import dev.once.cli.store.StoreUris.OpenStore;
import dev.once.cli.store.StoreUris.StoreUri;
import dev.once.cli.support.CommandFailure;
import dev.once.jdbc.JdbcStore;
import dev.once.redis.RedisStore;
import java.nio.file.Files;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * The {@code --store URI} option of every command that uses a store ({@code @Mixin}). A URI this
 * build cannot use is a usage error (exit 2, one line); a store that cannot be reached is a
 * {@link CommandFailure} (exit 2, one line). See {@link StoreUris} for the syntax.
 */
public final class StoreOption {

  /** Where the default store and the demo's report go, relative to the current directory. */
  public static final String DEFAULT_DIRECTORY = "once-data";

  /** The default store: a SQLite file under the current directory. */
  static final String DEFAULT_URI = "sqlite:./" + DEFAULT_DIRECTORY + "/once.db";

  @Spec(Spec.Target.MIXEE)
  CommandSpec mixee;

  @Option(names = "--store", defaultValue = DEFAULT_URI, paramLabel = "URI",
      description = {
          "Where Once keeps its records:",
          "sqlite:PATH, a file relative to the current directory, created with its table if "
              + "missing;",
          "memory:, this process only;",
          "postgres://user:pass@host:port/db;",
          "mariadb://user:pass@host:port/db;",
          "a jdbc:postgresql:... or jdbc:mariadb:... URL;",
          "redis://[:pass@]host:port[/db], rediss://... (TLS);",
          "redis-cluster://host:port[,host:port...];",
          "dynamodb://local[?endpoint=http://localhost:8000] or dynamodb://REGION, each with "
              + "an optional &table=NAME."})
  String store = DEFAULT_URI;

  @Option(names = "--table", defaultValue = JdbcStore.DEFAULT_TABLE, paramLabel = "NAME",
      description = "The table of a SQL or DynamoDB store.")
  String table = JdbcStore.DEFAULT_TABLE;

  @Option(names = "--key-prefix", paramLabel = "PREFIX",
      description = "The key prefix of a Redis store's records (default "
          + RedisStore.DEFAULT_KEY_PREFIX + "), as its RedisStore.builder().keyPrefix(...) says.")
  String keyPrefix;

  /** The table of {@code --table}. */
  public String table() {
    return table;
  }

  /**
   * The parsed URI; touches nothing.
   *
   * @throws ParameterException if it is malformed or names a store this build lacks
   */
  public StoreUri uri() {
    try {
      return StoreUris.parse(store);
    } catch (IllegalArgumentException e) {
      throw new ParameterException(mixee.commandLine(), e.getMessage());
    }
  }

  /**
   * Opens the store, with a pool of {@code connections} for a server or a SQLite file.
   *
   * @throws ParameterException if the URI is bad
   * @throws CommandFailure     (exit 2) if the store cannot be opened or reached
   */
  public OpenStore open(int connections) {
    return StoreUris.open(uri(), connections, table, keyPrefix);
  }

  /**
   * Opens a store that must already hold records: a SQLite file that does not exist, or a SQL
   * store without the table, is a {@link CommandFailure} naming the command that creates it;
   * nothing is created.
   */
  public OpenStore openExisting(int connections) {
    StoreUri uri = uri();
    if (uri.kind() == StoreUris.Kind.SQLITE && !Files.isRegularFile(uri.file())) {
      throw new CommandFailure(CommandFailure.CANNOT_RUN, "no store at " + uri.file()
          + "; create it with: once schema --apply --store " + uri.display()
          + " (or run: once demo)");
    }
    OpenStore opened = StoreUris.open(uri, connections, table, keyPrefix);
    try {
      opened.requireSchema();
      return opened;
    } catch (RuntimeException e) {
      opened.close();
      throw e;
    }
  }
}
