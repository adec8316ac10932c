package dev.once.jdbc;

import dev.once.StoreUnavailableException;
import dev.once.jdbc.internal.Dialect;
import dev.once.jdbc.internal.SchemaScript;
import dev.once.jdbc.internal.TableName;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.SQLException;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import javax.sql.DataSource;

/**
 * The databases {@link JdbcStore} speaks. They differ in how a claim locks (row locks, or SQLite's
 * single writer), in DDL and in how large a payload fits, so the store must know which one it
 * talks to; {@link JdbcStore.Builder#build()} detects it from the driver when not told.
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
   * The DDL that {@link JdbcStore#createSchema()} applies, for {@code table}: CREATE TABLE and
   * its two indexes, each {@code IF NOT EXISTS}. Hand it to your migration tool (Flyway, Liquibase)
   * if you prefer; the same text ships as {@link #schemaResource()}.
   *
   * @throws IllegalArgumentException if {@code table} is not a plain identifier
   */
  public String schema(String table) {
    return SchemaScript.text(schemaResource(), validate(table));
  }

  /**
   * The versioned classpath resource holding the DDL, with {@code ${table}} (the table name) and
   * {@code ${name}} (its unqualified part) placeholders.
   */
  public String schemaResource() {
    return "dev/once/jdbc/schema/" + directory + "/V1__once_records.sql";
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
      throw new StoreUnavailableException(
          "detecting the database dialect failed: " + e.getMessage(), e);
    }
    return fromProductName(String.valueOf(product)).orElseThrow(() -> new IllegalArgumentException(
        "unsupported database '" + product + "': the JDBC store speaks PostgreSQL, MariaDB/MySQL"
            + " and SQLite"));
  }

  TableName validate(String table) {
    TableName name = TableName.of(table);
    Dialect.of(this, name); // dialect-specific rules (SQLite: no schema)
    return name;
  }
}
