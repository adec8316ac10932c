package dev.once.cli.store;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.once.InMemoryStore;
import dev.once.StoreUnavailableException;
import dev.once.cli.support.CommandFailure;
import dev.once.jdbc.JdbcDialect;
import dev.once.jdbc.JdbcStore;
import dev.once.redis.Durability;
import dev.once.spi.IdempotencyStore;
import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.Driver;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Locale;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * The store URIs of the {@code --store} option, and opening the store one names.
 *
 * <ul>
 *   <li>{@code sqlite:PATH}: a SQLite file, relative to the current directory ({@code ~/} is the
 *       home directory; {@code sqlite:///abs/path} works too); parent directories are created.
 *   <li>{@code memory:}: in this process, gone when it ends.
 *   <li>{@code postgres://user:pass@host:port/db?params} ({@code postgresql://} too) and
 *       {@code jdbc:postgresql://…} as the driver takes it.
 *   <li>{@code mariadb://user:pass@host:port/db?params} and {@code jdbc:mariadb://…}.
 * </ul>
 *
 * <p>{@link #parse} touches nothing (no file, no network): a bad URI is a usage error before any
 * work starts. {@link #open} connects; servers get a HikariCP pool. Passwords never appear in what
 * this class prints ({@link StoreUri#display()}, error messages).
 */
public final class StoreUris {

  /** What the error for an unknown scheme lists. ASCII dots: a terminal may lack the ellipsis. */
  public static final String SUPPORTED = "sqlite:PATH, memory:, postgres://..., mariadb://..., "
      + "redis://..., redis-sentinel://..., redis-cluster://..., dynamodb://local or "
      + "dynamodb://REGION";

  /** How long to wait for a server connection, at start and from the pool. */
  static final long CONNECT_TIMEOUT_MILLIS = 5_000;

  private static final Pattern USER_INFO_PASSWORD = Pattern.compile("(//[^/@:?#]*:)[^/@?#]*@");
  private static final Pattern PASSWORD_PARAMETER =
      Pattern.compile("((?:^|[?&;])password=)[^&;]*", Pattern.CASE_INSENSITIVE);

  private StoreUris() {}

  /** The kinds of store this build can open. */
  public enum Kind {
    MEMORY("in memory", null),
    SQLITE("SQLite", JdbcDialect.SQLITE),
    POSTGRESQL("PostgreSQL", JdbcDialect.POSTGRESQL),
    MARIADB("MariaDB", JdbcDialect.MARIADB),
    DYNAMODB("DynamoDB", null),
    REDIS("Redis", null),
    REDIS_CLUSTER("Redis Cluster", null);

    private final String label;
    private final JdbcDialect dialect;

    Kind(String label, JdbcDialect dialect) {
      this.label = label;
      this.dialect = dialect;
    }

    /** The store's name for people ("PostgreSQL", "Redis Cluster"). */
    String label() {
      return label;
    }

    /** The SQL dialect of a SQL store; null for the others. */
    public JdbcDialect dialect() {
      return dialect;
    }
  }

  /**
   * A parsed store URI.
   *
   * @param kind     which store
   * @param display  the URI as given, password masked: safe to print
   * @param file     for {@link Kind#SQLITE}, the absolute file; else null
   * @param jdbcUrl  for a server, the JDBC URL (credentials of a {@code user:pass@} part excluded);
   *                 else null
   * @param user     the user of a {@code user:pass@} part, or null
   * @param password the password of a {@code user:pass@} part, or null
   * @param service  for a store reached through its own client (DynamoDB, Redis), what the client
   *                 needs; else null
   */
  public record StoreUri(Kind kind, String display, Path file, String jdbcUrl, String user,
      String password, ServiceStores.Service service) {

    /** Whether the records outlive the process. */
    public boolean persistent() {
      return kind != Kind.MEMORY;
    }

    @Override
    public String toString() {
      return display; // never the password
    }
  }

  /**
   * Parses {@code text}; touches neither files nor network.
   *
   * @throws IllegalArgumentException with a one-line message for the user
   */
  public static StoreUri parse(String text) {
    if (text == null || text.isBlank()) {
      throw new IllegalArgumentException("the store URI is empty (supported: " + SUPPORTED + ")");
    }
    int colon = text.indexOf(':');
    if (colon <= 0) {
      throw new IllegalArgumentException("store URI '" + mask(text) + "' has no scheme (supported: "
          + SUPPORTED + ")");
    }
    String scheme = text.substring(0, colon).toLowerCase(Locale.ROOT);
    String rest = text.substring(colon + 1);
    switch (scheme) {
      case "memory":
        if (!rest.isEmpty() && !rest.equals("//")) {
          throw new IllegalArgumentException("store URI '" + mask(text)
              + "': memory: takes nothing after the colon");
        }
        return new StoreUri(Kind.MEMORY, "memory:", null, null, null, null, null);
      case "sqlite":
        return sqlite(text, rest);
      case "postgres":
      case "postgresql":
        return server(text, Kind.POSTGRESQL, "postgresql", 5432);
      case "mariadb":
        return server(text, Kind.MARIADB, "mariadb", 3306);
      case "jdbc":
        return jdbc(text, rest);
      case "dynamodb":
        return ServiceStores.parseDynamoDb(text);
      case "redis":
      case "rediss":
      case "redis-sentinel":
      case "rediss-sentinel":
      case "redis-cluster":
      case "rediss-cluster":
        return ServiceStores.parseRedis(text, scheme);
      default:
        throw unsupported(text);
    }
  }

  private static IllegalArgumentException unsupported(String text) {
    return new IllegalArgumentException("store URI '" + mask(text)
        + "' is not supported by this build (supported: " + SUPPORTED + ")");
  }

  private static StoreUri sqlite(String text, String rest) {
    String path = rest;
    if (path.startsWith("//")) {
      // sqlite:///abs/path: an empty host, then the absolute path.
      path = path.substring(2);
      if (!path.isEmpty() && !path.startsWith("/")) {
        throw new IllegalArgumentException("store URI '" + mask(text) + "' names a host; SQLite "
            + "takes a file: sqlite:PATH or sqlite:///absolute/path");
      }
    }
    if (path.isBlank()) {
      throw new IllegalArgumentException("store URI '" + mask(text) + "' has no file path "
          + "(expected sqlite:PATH, e.g. " + StoreOption.DEFAULT_URI + ")");
    }
    String last = path.substring(path.lastIndexOf('/') + 1);
    if (last.isEmpty() || last.equals(".") || last.equals("..")) {
      throw new IllegalArgumentException("store URI '" + mask(text) + "' names a directory; give "
          + "sqlite: a file path, e.g. " + StoreOption.DEFAULT_URI);
    }
    if (path.equals(":memory:") || path.startsWith("file:")) {
      throw new IllegalArgumentException("store URI '" + mask(text) + "': give sqlite: a file path"
          + " (for a store in memory use memory:)");
    }
    if (path.equals("~") || path.startsWith("~/")) {
      path = System.getProperty("user.home") + path.substring(1);
    }
    Path file;
    try {
      file = Path.of(path).toAbsolutePath().normalize();
    } catch (InvalidPathException e) {
      throw new IllegalArgumentException("store URI '" + mask(text) + "' is not a valid file path: "
          + e.getReason());
    }
    return new StoreUri(Kind.SQLITE, mask(text), file, null, null, null, null);
  }

  /** {@code postgres://user:pass@host:port/db?params} and {@code mariadb://…}. */
  private static StoreUri server(String text, Kind kind, String jdbcScheme, int defaultPort) {
    String expected = " (expected " + text.substring(0, text.indexOf(':'))
        + "://user:pass@host:port/database)";
    URI uri;
    try {
      uri = new URI(text);
    } catch (URISyntaxException e) {
      // Not e.getMessage(): it quotes the input, password included.
      throw new IllegalArgumentException("store URI '" + mask(text) + "' is malformed: "
          + e.getReason() + " at index " + e.getIndex() + expected);
    }
    if (uri.isOpaque()) {
      throw new IllegalArgumentException("store URI '" + mask(text) + "' is malformed" + expected);
    }
    String host = uri.getHost();
    if (host == null) {
      if (uri.getRawAuthority() != null && !uri.getRawAuthority().isEmpty()) {
        // A registry-based authority: the host or port did not parse.
        throw new IllegalArgumentException("store URI '" + mask(text) + "' has a malformed host "
            + "or port; percent-encode special characters of the user and password" + expected);
      }
      host = "localhost";
    }
    String path = uri.getRawPath();
    String database = path == null || path.length() < 2 ? "" : path.substring(1);
    if (database.isEmpty() || database.contains("/")) {
      throw new IllegalArgumentException("store URI '" + mask(text) + "' names no database"
          + expected);
    }
    if (uri.getRawFragment() != null) {
      throw new IllegalArgumentException("store URI '" + mask(text) + "' has a fragment (#...); "
          + "connection parameters go in the query (?name=value)");
    }
    String user = null;
    String password = null;
    String userInfo = uri.getRawUserInfo();
    if (userInfo != null) {
      int sep = userInfo.indexOf(':');
      user = decode(sep < 0 ? userInfo : userInfo.substring(0, sep));
      password = sep < 0 ? null : decode(userInfo.substring(sep + 1));
      if (user.isEmpty()) {
        user = null;
      }
    }
    int port = uri.getPort() < 0 ? defaultPort : uri.getPort();
    String jdbcUrl = "jdbc:" + jdbcScheme + "://" + host + ":" + port + "/" + database
        + (uri.getRawQuery() == null ? "" : "?" + uri.getRawQuery());
    String scheme = text.substring(0, text.indexOf(':')).toLowerCase(Locale.ROOT);
    String display = scheme + "://" + (user == null ? "" : user + (password == null ? "" : ":***")
        + "@") + host + ":" + port + "/" + database
        + (uri.getRawQuery() == null ? "" : "?" + mask(uri.getRawQuery()));
    return new StoreUri(kind, display, null, jdbcUrl, user, password, null);
  }

  /** {@code jdbc:postgresql:…} and {@code jdbc:mariadb:…}, handed to the driver as they are. */
  private static StoreUri jdbc(String text, String rest) {
    int colon = rest.indexOf(':');
    String sub = colon < 0 ? rest : rest.substring(0, colon);
    Kind kind;
    Driver driver;
    switch (sub.toLowerCase(Locale.ROOT)) {
      case "postgresql":
        kind = Kind.POSTGRESQL;
        driver = new org.postgresql.Driver();
        break;
      case "mariadb":
        kind = Kind.MARIADB;
        driver = new org.mariadb.jdbc.Driver();
        break;
      case "sqlite":
        return sqlite(text, colon < 0 ? "" : rest.substring(colon + 1));
      default:
        throw unsupported(text);
    }
    boolean accepted;
    try {
      // MariaDB's driver accepts any jdbc:mariadb: prefix; its URLs always have a //host part.
      accepted = driver.acceptsURL(text) && (kind != Kind.MARIADB || text.contains("//"));
    } catch (SQLException e) {
      accepted = false;
    }
    if (!accepted) {
      throw new IllegalArgumentException("store URI '" + mask(text) + "' is not a JDBC URL the "
          + kind.label() + " driver accepts (expected jdbc:" + sub + "://host:port/database)");
    }
    return new StoreUri(kind, mask(text), null, text, null, null, null);
  }

  private static String decode(String raw) {
    // URLDecoder decodes form encoding, where '+' is a space; in a URI it is a plus.
    return URLDecoder.decode(raw.replace("+", "%2B"), StandardCharsets.UTF_8);
  }

  /** {@code text} with the password of a {@code user:pass@} part and a password= parameter masked. */
  static String mask(String text) {
    String masked = USER_INFO_PASSWORD.matcher(text).replaceFirst("$1***@");
    return PASSWORD_PARAMETER.matcher(masked).replaceAll("$1***");
  }

  /**
   * Opens the store {@code uri} names. Servers get a HikariCP pool of {@code connections} (opened
   * on demand) and are contacted once now, so an unreachable one fails here; a SQLite file's
   * parent directories are created. Applies no DDL: see {@link OpenStore#createSchema()}.
   *
   * @throws CommandFailure (exit 2) with a one-line message for the user
   */
  static OpenStore open(StoreUri uri, int connections) {
    return open(uri, connections, JdbcStore.DEFAULT_TABLE);
  }

  /** {@link #open(StoreUri, int)} with the records in {@code table} of a SQL store. */
  public static OpenStore open(StoreUri uri, int connections, String table) {
    return open(uri, connections, table, null);
  }

  /**
   * {@link #open(StoreUri, int, String)}, with the records of a Redis store under
   * {@code keyPrefix} (null: the store's default).
   */
  static OpenStore open(StoreUri uri, int connections, String table, String keyPrefix) {
    return open(uri, connections, table, keyPrefix, null);
  }

  /**
   * {@link #open(StoreUri, int, String, String)}, a Redis store writing with {@code durability}
   * (null: the store's default).
   */
  public static OpenStore open(StoreUri uri, int connections, String table, String keyPrefix,
      Durability durability) {
    Objects.requireNonNull(uri, "uri");
    switch (uri.kind()) {
      case MEMORY:
        return new OpenStore(uri, new InMemoryStore(), null);
      case SQLITE:
        return openSqlite(uri, connections, table);
      case DYNAMODB:
      case REDIS:
      case REDIS_CLUSTER:
        return ServiceStores.open(uri, table, keyPrefix, durability);
      default:
        return openServer(uri, connections, table);
    }
  }

  private static OpenStore openSqlite(StoreUri uri, int connections, String table) {
    Path file = uri.file();
    if (Files.isDirectory(file)) {
      throw cannotOpen(uri, file + " is a directory");
    }
    try {
      Path parent = file.getParent();
      if (parent != null) {
        Files.createDirectories(parent);
      }
    } catch (IOException e) {
      throw cannotOpen(uri, "cannot create the directory " + file.getParent() + " ("
          + e.getClass().getSimpleName() + ": " + e.getMessage() + ")");
    }
    // A pool rather than a connection per operation: opening the file and setting WAL and the busy
    // timeout costs more than the statement. The store's settings (WAL, busy timeout,
    // synchronous=FULL) come with JdbcStore.sqliteDataSource and stay as they are.
    HikariConfig config = poolConfig(uri, connections);
    config.setDataSource(JdbcStore.sqliteDataSource(file));
    HikariDataSource pool = startPool(uri, config);
    return new OpenStore(uri, jdbcStore(uri, pool, JdbcDialect.SQLITE, table), pool);
  }

  private static JdbcStore jdbcStore(StoreUri uri, HikariDataSource pool, JdbcDialect dialect,
      String table) {
    try {
      return JdbcStore.builder(pool).dialect(dialect).table(table).build();
    } catch (IllegalArgumentException e) {
      pool.close();
      throw new CommandFailure(CommandFailure.CANNOT_RUN, e.getMessage());
    }
  }

  private static OpenStore openServer(StoreUri uri, int connections, String table) {
    HikariConfig config = poolConfig(uri, connections);
    config.setJdbcUrl(uri.jdbcUrl());
    if (uri.user() != null) {
      config.setUsername(uri.user());
    }
    if (uri.password() != null) {
      config.setPassword(uri.password());
    }
    JdbcDialect dialect;
    if (uri.kind() == Kind.POSTGRESQL) {
      config.setDriverClassName("org.postgresql.Driver");
      dialect = JdbcDialect.POSTGRESQL;
    } else {
      config.setDriverClassName("org.mariadb.jdbc.Driver");
      // What the JDBC store asks of MariaDB; set on the pool, it saves two SETs per transaction.
      config.setTransactionIsolation("TRANSACTION_READ_COMMITTED");
      dialect = JdbcDialect.MARIADB;
    }
    HikariDataSource pool = startPool(uri, config);
    return new OpenStore(uri, jdbcStore(uri, pool, dialect, table), pool);
  }

  private static HikariConfig poolConfig(StoreUri uri, int connections) {
    HikariConfig config = new HikariConfig();
    config.setPoolName("once-" + uri.kind().name().toLowerCase(Locale.ROOT));
    config.setMaximumPoolSize(Math.max(1, connections));
    // Grow on demand: 256 workers must not open 260 server connections up front.
    config.setMinimumIdle(Math.min(2, Math.max(1, connections)));
    config.setConnectionTimeout(CONNECT_TIMEOUT_MILLIS);
    // Fail at start if the first connection cannot be made (the default, stated on purpose).
    config.setInitializationFailTimeout(1);
    return config;
  }

  private static HikariDataSource startPool(StoreUri uri, HikariConfig config) {
    try {
      return new HikariDataSource(config);
    } catch (RuntimeException e) {
      throw cannotOpen(uri, causeMessage(e));
    }
  }

  /**
   * The message worth showing for {@code e}: that of the first {@link SQLException} in its causes
   * (the driver's own words, without the pool's or the store's wrapping), else of the deepest
   * cause; on one line.
   */
  public static String causeMessage(Throwable e) {
    Throwable deepest = e;
    for (Throwable t = e; t != null && t.getCause() != t; t = t.getCause()) {
      if (t instanceof SQLException && t.getMessage() != null && !t.getMessage().isBlank()) {
        return oneLine(t.getMessage());
      }
      deepest = t;
    }
    String message = deepest.getMessage();
    if (message == null || message.isBlank()) {
      message = e.getMessage();
    }
    return oneLine(message == null || message.isBlank() ? deepest.getClass().getName() : message);
  }

  private static String oneLine(String message) {
    return message.replaceAll("\\s*\\R\\s*", " ").strip();
  }

  /** A store that could not be opened or reached: one line, exit 2. */
  private static CommandFailure cannotOpen(StoreUri uri, String cause) {
    return new CommandFailure(CommandFailure.CANNOT_RUN, cannotOpenMessage(uri, cause));
  }

  /** "cannot reach the store at URI: cause" ("cannot open" for a file). */
  public static String cannotOpenMessage(StoreUri uri, String cause) {
    return (uri.kind() == Kind.SQLITE ? "cannot open the store at " : "cannot reach the store at ")
        + uri.display() + ": " + cause;
  }

  /** An opened store and what it holds open; closing it closes the pool. */
  public static final class OpenStore implements AutoCloseable {
    private final StoreUri uri;
    private final IdempotencyStore store;
    private final HikariDataSource pool;

    OpenStore(StoreUri uri, IdempotencyStore store, HikariDataSource pool) {
      this.uri = uri;
      this.store = store;
      this.pool = pool;
    }

    /** The URI the store was opened from. */
    public StoreUri uri() {
      return uri;
    }

    /** The opened store. */
    public IdempotencyStore store() {
      return store;
    }

    /** The pool of a SQL store, for statements of the command's own; null in memory. */
    public javax.sql.DataSource dataSource() {
      return pool;
    }

    /**
     * Creates the table and its indexes if missing ({@link JdbcStore#createSchema()}, idempotent);
     * nothing for a store in memory.
     *
     * @throws StoreUnavailableException if the database refuses
     */
    public void createSchema() {
      if (store instanceof JdbcStore jdbc) {
        jdbc.createSchema();
      } else {
        ServiceStores.createSchema(store);
      }
    }

    /**
     * Checks that the table exists, for commands that read or maintain records and must not
     * create anything.
     *
     * @throws CommandFailure (exit 2) naming the command that creates it
     */
    void requireSchema() {
      if (!(store instanceof JdbcStore jdbc)) {
        ServiceStores.requireSchema(uri, store);
        return;
      }
      try (Connection connection = pool.getConnection();
           Statement statement = connection.createStatement()) {
        // Portable across dialects, and cheap: the planner answers it without reading a row.
        statement.executeQuery("SELECT 1 FROM " + jdbc.table() + " WHERE 1 = 0").close();
      } catch (SQLException e) {
        throw new CommandFailure(CommandFailure.CANNOT_RUN, "no table " + jdbc.table() + " at "
            + uri.display() + " (" + causeMessage(e) + "); create it with: "
            + ServiceStores.schemaCommand(uri, jdbc.table()));
      }
    }

    /** Where the records are, for people: "SQLite file /x/once.db, table once_records". */
    public String describe() {
      switch (uri.kind()) {
        case MEMORY:
          return "in memory (gone when the command ends)";
        case SQLITE:
          return "SQLite file " + uri.file() + ", table " + ((JdbcStore) store).table();
        case DYNAMODB:
        case REDIS:
        case REDIS_CLUSTER:
          return ServiceStores.describe(uri, store);
        default:
          return uri.kind().label() + " " + uri.display() + ", table " + ((JdbcStore) store).table();
      }
    }

    @Override
    public void close() {
      try {
        store.close();
      } finally {
        if (pool != null) {
          pool.close();
        }
      }
    }
  }
}
