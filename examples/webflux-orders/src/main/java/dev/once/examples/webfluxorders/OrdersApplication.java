package dev.once.examples.webfluxorders;

import dev.once.jdbc.JdbcStore;
import java.nio.file.Files;
import java.nio.file.Path;
import javax.sql.DataSource;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;

/**
 * An orders API on Spring WebFlux (Reactor Netty) with the Once starter. {@code POST /orders} is
 * protected by the {@code Idempotency-Key} WebFilter the starter auto-configures from
 * {@code once.http.*}; {@code POST /orders/{id}/payment} by {@code @Idempotent} on
 * {@link Payments#pay}, which returns a {@code Mono}.
 */
@SpringBootApplication
public class OrdersApplication {

  public static void main(String[] args) {
    SpringApplication.run(OrdersApplication.class, args);
  }

  /**
   * One SQLite file holds the orders, the store credit and Once's records (the starter makes its
   * JdbcStore from this, the context's only DataSource). {@link JdbcStore#sqliteDataSource} sets
   * what the store needs of SQLite: WAL, a busy timeout, synchronous=FULL.
   */
  @Bean
  DataSource dataSource(@Value("${orders.db}") Path file) throws java.io.IOException {
    Path parent = file.toAbsolutePath().getParent();
    if (parent != null) {
      Files.createDirectories(parent);
    }
    return JdbcStore.sqliteDataSource(file);
  }
}
