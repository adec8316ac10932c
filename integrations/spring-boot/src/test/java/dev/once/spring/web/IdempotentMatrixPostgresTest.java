package dev.once.spring.web;

import dev.once.spring.TestDatabaseAccess;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Bean;

/**
 * {@link IdempotentMatrixContract} on a {@code JdbcStore} on PostgreSQL (embedded), made by the
 * starter from the application's DataSource, whose connections the outage refuses: one
 * application for every case.
 */
@SpringBootTest(classes = {MatrixApplication.class, IdempotentMatrixPostgresTest.Store.class},
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {"server.address=127.0.0.1", "once.http.paths=/filtered/**",
        "once.jdbc.create-schema=true", "once.jdbc.table=matrix_records"})
class IdempotentMatrixPostgresTest extends IdempotentMatrixContract {

  /** The application's DataSource on PostgreSQL, which the starter makes a JdbcStore of. */
  static class Store {
    @Bean
    MatrixApplication.SwitchableDataSource dataSource() {
      return new MatrixApplication.SwitchableDataSource(TestDatabaseAccess.postgres());
    }

    @Bean
    MatrixApplication.Outage outage(MatrixApplication.SwitchableDataSource dataSource) {
      return dataSource::down;
    }
  }
}
