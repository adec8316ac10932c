package dev.once.spring.web;

import dev.once.InMemoryStore;
import dev.once.spring.TestDatabaseAccess;
import dev.once.testkit.UnreachableStore;
import javax.sql.DataSource;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Bean;

/** {@link IdempotentMatrixContract} on the in-memory store: one application for every case. */
@SpringBootTest(classes = {MatrixApplication.class, IdempotentMatrixInMemoryTest.Store.class},
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {"server.address=127.0.0.1", "once.http.paths=/filtered/**"})
class IdempotentMatrixInMemoryTest extends IdempotentMatrixContract {

  /** The in-memory store, seen through a view that can be cut off. */
  static class Store {
    @Bean
    UnreachableStore onceStore() {
      return new UnreachableStore(new InMemoryStore());
    }

    @Bean
    MatrixApplication.Outage outage(UnreachableStore store) {
      return store::down;
    }

    /** Unused by Once (the store above wins); Boot's JDBC auto-configuration wants one. */
    @Bean
    DataSource dataSource() {
      return TestDatabaseAccess.sqlite();
    }
  }
}
