package dev.once.webflux;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.once.jdbc.JdbcDialect;
import dev.once.jdbc.JdbcStore;
import dev.once.spi.IdempotencyStore;
import dev.once.testkit.TestPostgres;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterAll;

/** The HTTP contract over the JDBC store on a real PostgreSQL (embedded binaries). */
class PostgresWebFilterTest extends WebFluxContract {

  private HikariDataSource dataSource;

  @Override
  protected IdempotencyStore newStore(Path dir) throws Exception {
    HikariConfig config = new HikariConfig();
    config.setPoolName("once-webflux-postgres");
    config.setJdbcUrl(TestPostgres.jdbcUrl());
    config.setMaximumPoolSize(16);
    dataSource = new HikariDataSource(config);
    JdbcStore store = JdbcStore.builder(dataSource).dialect(JdbcDialect.POSTGRESQL)
        .table("once_webflux_" + Long.toHexString(System.nanoTime())).build();
    store.createSchema();
    return store;
  }

  @AfterAll
  void closePool() {
    if (dataSource != null) {
      dataSource.close();
    }
  }
}
