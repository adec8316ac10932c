package dev.once.jdbc;

import dev.once.StoreUnavailableException;
import dev.once.jdbc.internal.Dialect;
import dev.once.jdbc.internal.SchemaScript;
import dev.once.jdbc.internal.TableName;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.SQLException;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import javax.sql.DataSource;

/**
 * The databases {@link JdbcStore} speaks. They differ in how a claim locks (row locks, or SQLite's
 * single writer), in DDL and in how large a payload fits, so the store must know which one it
 * talks to; without {@link JdbcStore.Builder#dialect} the store detects it from the driver on its
 * first call.
 */
public enum JdbcDialect {
  /** PostgreSQL 12 or later. */
  POSTGRESQL("postgresql"),
  /** MariaDB 10.5 or later, and MySQL 8 (InnoDB). */
  MARIADB("mariadb"),
  /** SQLite 3.24 or later (sqlite-jdbc), in WAL mode with a busy timeout. */
  SQLITE("sqlite");

  private final String directory;

  JdbcDialect(String directory) {
    this.directory = directory;
  }

  /**
   * The DDL that {@link JdbcStore#createSchema()} applies, for {@code table}: every version of
   * {@link #schemaResources()} in order. Version 1 creates the table and its two indexes, each
   * {@code IF NOT EXISTS}; version 2 adds the {@code claim_id} column to a table made by version 1
   * ({@code ADD COLUMN IF NOT EXISTS} on PostgreSQL and MariaDB; SQLite has no such clause, so
   * there the text is for a table without the column, and {@code createSchema()} checks first).
   * PostgreSQL has a version 3: the {@code purge_after} column and its index replace the index on
   * {@code expires_at}, so that a completion changes no indexed column and is a HOT update; and a
   * version 4, a {@code DO} block that gives a table versions 1 to 3 have just made (empty, used
   * by nothing) a column order in which a completion logs only what it changes; and a version 5
   * that drops version 1's three {@code CHECK} constraints, which PostgreSQL compiles again for
   * every write.
   * Apply it to a table once (or let {@code createSchema()} apply what is missing); hand the
   * versions to your migration tool (Flyway, Liquibase) if you prefer.
   *
   * @throws IllegalArgumentException if {@code table} is not a plain identifier
   */
  public String schema(String table) {
    TableName name = validate(table);
    StringBuilder text = new StringBuilder();
    for (String resource : schemaResources()) {
      String part = SchemaScript.text(resource, name);
      text.append(part);
      if (!part.endsWith("\n")) {
        text.append('\n');
      }
    }
    return text.toString();
  }

  /**
   * The versioned classpath resources holding the DDL, oldest first, with {@code ${table}} (the
   * table name) and {@code ${name}} (its unqualified part) placeholders: {@code V1__once_records.sql}
   * (the table and its indexes), {@code V2__once_records_claim_id.sql} (the claim id column) and,
   * on PostgreSQL, {@code V3__once_records_purge_after.sql} (the expiry floor that lets
   * completions be HOT updates) and {@code V4__once_records_layout.sql} (a column order that logs
   * less per write: it remakes a table that versions 1 to 3 have just made and leaves any other as
   * it is) and {@code V5__once_records_no_checks.sql} (drops version 1's {@code CHECK}
   * constraints). Ship each as a migration of its own, in order.
   */
  public List<String> schemaResources() {
    String dir = "dev/once/jdbc/schema/" + directory + "/";
    if (this == POSTGRESQL) {
      return List.of(dir + "V1__once_records.sql", dir + "V2__once_records_claim_id.sql",
          dir + "V3__once_records_purge_after.sql", dir + "V4__once_records_layout.sql",
          dir + "V5__once_records_no_checks.sql");
    }
    return List.of(dir + "V1__once_records.sql", dir + "V2__once_records_claim_id.sql");
  }

  /**
   * The first of {@link #schemaResources()}: the table and its indexes as version 1 made them.
   * A table needs the later versions too.
   */
  public String schemaResource() {
    return schemaResources().get(0);
  }

  /**
   * The largest outcome or checkpoint stored by default: 64 MiB for PostgreSQL and SQLite; for
   * MariaDB/MySQL 8 MiB less 64 KiB, because the driver escapes bytes into the statement text (up to
   * twice their size: every 0x00, quote and backslash doubles) and the server refuses statements
   * above {@code max_allowed_packet}, 16 MiB by default on MariaDB.
   */
  public int defaultMaxPayloadBytes() {
    return this == MARIADB ? (8 << 20) - (64 << 10) : 64 << 20;
  }

  /**
   * The dialect of a database product name as JDBC reports it
   * ({@link DatabaseMetaData#getDatabaseProductName()}).
   */
  public static Optional<JdbcDialect> fromProductName(String productName) {
    String name = Objects.requireNonNull(productName, "productName").toLowerCase(Locale.ROOT);
    if (name.contains("postgres")) {
      return Optional.of(POSTGRESQL);
    }
    if (name.contains("mariadb") || name.contains("mysql")) {
      return Optional.of(MARIADB);
    }
    if (name.contains("sqlite")) {
      return Optional.of(SQLITE);
    }
    return Optional.empty();
  }

  /**
   * Asks the database behind {@code dataSource} which it is.
   *
   * @throws StoreUnavailableException if no connection can be made
   * @throws IllegalArgumentException  if the database is none of these
   */
  public static JdbcDialect detect(DataSource dataSource) {
    Objects.requireNonNull(dataSource, "dataSource");
    String product;
    try (Connection c = dataSource.getConnection()) {
      product = c.getMetaData().getDatabaseProductName();
    } catch (SQLException e) {
      // Nothing was written: no connection, or only its metadata was read.
      throw new StoreUnavailableException(
          "detecting the database dialect failed: " + e.getMessage(), e, false);
    }
    return fromProductName(String.valueOf(product)).orElseThrow(() -> new IllegalArgumentException(
        "unsupported database '" + product + "': the JDBC store speaks PostgreSQL, MariaDB/MySQL"
            + " and SQLite"));
  }

  TableName validate(String table) {
    TableName name = TableName.of(table);
    Dialect.of(name(), schemaResources(), name); // dialect-specific rules (SQLite: no schema)
    return name;
  }
}
