package dev.once.jdbc.internal;

import java.nio.file.Path;
import javax.sql.DataSource;
import org.sqlite.SQLiteConfig;
import org.sqlite.SQLiteDataSource;

/**
 * DataSources for SQLite files. In a class of its own so that the store loads without sqlite-jdbc
 * on the classpath unless this is used.
 */
public final class SqliteFiles {

  /** How long a connection waits for the write lock before SQLITE_BUSY. */
  public static final int BUSY_TIMEOUT_MILLIS = 5_000;

  private SqliteFiles() {}

  /**
   * A DataSource over {@code file}: WAL journal (readers never block the writer), a 5 s busy
   * timeout (writers queue instead of failing), synchronous=FULL (a commit survives power loss:
   * a lost COMPLETED record would run the logic twice).
   */
  public static DataSource dataSource(Path file) {
    SQLiteConfig config = new SQLiteConfig();
    config.setJournalMode(SQLiteConfig.JournalMode.WAL);
    config.setBusyTimeout(BUSY_TIMEOUT_MILLIS);
    config.setSynchronous(SQLiteConfig.SynchronousMode.FULL);
    SQLiteDataSource dataSource = new SQLiteDataSource(config);
    dataSource.setUrl("jdbc:sqlite:" + file.toAbsolutePath());
    return dataSource;
  }
}
