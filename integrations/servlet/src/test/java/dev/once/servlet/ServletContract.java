package dev.once.servlet;

import dev.once.jdbc.JdbcDialect;
import dev.once.jdbc.JdbcStore;
import dev.once.spi.IdempotencyStore;
import dev.once.testkit.http.ContractApp;
import dev.once.testkit.http.ContractServer;
import dev.once.testkit.http.HttpIdempotencyContract;
import dev.once.testkit.http.Route;
import jakarta.servlet.Filter;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The published HTTP contract ({@link HttpIdempotencyContract}) over {@link IdempotencyFilter} in
 * an embedded Tomcat: {@link TestAuthFilter}, then one filter per route, then {@link TestApp}.
 */
abstract class ServletContract extends HttpIdempotencyContract {

  @Override
  protected IdempotencyStore unreachableStore(Path dir) {
    // A real store whose table was never created: every call fails as a lost database would.
    return JdbcStore.builder(JdbcStore.sqliteDataSource(dir.resolve("empty.db")))
        .dialect(JdbcDialect.SQLITE).build();
  }

  @Override
  protected ContractServer start(Map<String, Route> routes, ContractApp app) {
    Map<String, Filter> filters = new LinkedHashMap<>();
    filters.put("auth", new TestAuthFilter());
    routes.forEach((name, route) -> filters.put(name, filter(route)));
    TestServer server = TestServer.start(filters, new TestApp(app));
    return new ContractServer() {
      @Override
      public int port() {
        return server.port();
      }

      @Override
      public void close() {
        server.close();
      }
    };
  }

  /** The filter a route describes. */
  static IdempotencyFilter filter(Route route) {
    IdempotencyFilter.Builder builder = IdempotencyFilter.builder(route.once())
        .paths(route.paths()).excludePaths(route.excludePaths())
        .storeServerErrors(route.storeServerErrors()).keyRequired(route.keyRequired())
        .tenantResolver(switch (route.tenant()) {
          case SHARED -> TenantResolver.none();
          case PRINCIPAL -> TenantResolver.principal();
          case API_KEY -> TenantResolver.header("X-Api-Key");
        });
    if (route.scope() != null) {
      builder.scope(route.scope());
    }
    if (route.maxRequestBytes() != null) {
      builder.maxRequestBytes(route.maxRequestBytes());
    }
    if (route.maxResponseBytes() != null) {
      builder.maxResponseBytes(route.maxResponseBytes());
    }
    return builder.build();
  }

  @Override
  protected String loggerName() {
    return IdempotencyFilter.class.getName();
  }
}
