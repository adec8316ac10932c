package dev.once.spring;

import javax.sql.DataSource;

/** {@link TestDatabases} for test classes in other packages. */
public final class TestDatabaseAccess {

  private TestDatabaseAccess() {}

  /** A new SQLite database file. */
  public static DataSource sqlite() {
    return TestDatabases.sqlite();
  }

  /** A new pool on the embedded PostgreSQL server (a HikariDataSource: close it). */
  public static DataSource postgres() {
    return TestDatabases.postgres();
  }
}
