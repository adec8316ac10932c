package dev.once.jaxrs;

import dev.once.jdbc.JdbcDialect;
import dev.once.jdbc.JdbcStore;
import dev.once.spi.IdempotencyStore;
import dev.once.testkit.http.ContractApp;
import dev.once.testkit.http.ContractServer;
import dev.once.testkit.http.HttpIdempotencyContract;
import dev.once.testkit.http.Route;
import jakarta.ws.rs.Priorities;
import jakarta.ws.rs.container.ContainerRequestContext;
import jakarta.ws.rs.container.ContainerRequestFilter;
import jakarta.ws.rs.core.SecurityContext;
import java.net.URI;
import java.nio.file.Path;
import java.security.Principal;
import java.util.Map;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.glassfish.grizzly.http.server.HttpServer;
import org.glassfish.grizzly.http.server.NetworkListener;
import org.glassfish.grizzly.threadpool.ThreadPoolConfig;
import org.glassfish.jersey.grizzly2.httpserver.GrizzlyHttpServerFactory;
import org.glassfish.jersey.server.ResourceConfig;

/**
 * The published HTTP contract ({@link HttpIdempotencyContract}) over {@link IdempotencyFeature} in
 * Jersey on Grizzly, a real HTTP server on 127.0.0.1: an authentication filter, the feature with
 * one configuration per route, then {@link ContractResource}.
 */
abstract class JerseyContract extends HttpIdempotencyContract {

  private static final Logger GRIZZLY_LOG = Logger.getLogger("org.glassfish");

  @Override
  protected IdempotencyStore unreachableStore(Path dir) {
    // A real store whose table was never created: every call fails as a lost database would.
    return JdbcStore.builder(JdbcStore.sqliteDataSource(dir.resolve("empty.db")))
        .dialect(JdbcDialect.SQLITE).build();
  }

  @Override
  protected ContractServer start(Map<String, Route> routes, ContractApp app) throws Exception {
    ResourceConfig config = new ResourceConfig()
        .register(new XUserAuthentication(), Priorities.AUTHENTICATION)
        .register(IdempotencyFeature.of(routes.values().stream().map(JerseyContract::feature)
            .toArray(IdempotencyFeature[]::new)))
        .register(new ContractResource(app));
    return serve(config);
  }

  /** Jersey on Grizzly on 127.0.0.1 and a free port, with enough workers for held requests. */
  static ContractServer serve(ResourceConfig config) throws Exception {
    GRIZZLY_LOG.setLevel(Level.SEVERE);
    HttpServer server = GrizzlyHttpServerFactory.createHttpServer(
        URI.create("http://127.0.0.1:0/"), config, false);
    NetworkListener listener = server.getListener("grizzly");
    listener.getTransport().setWorkerThreadPoolConfig(ThreadPoolConfig.defaultConfig()
        .setCorePoolSize(32).setMaxPoolSize(32));
    server.start();
    return new ContractServer() {
      @Override
      public int port() {
        return listener.getPort();
      }

      @Override
      public void close() {
        server.shutdownNow();
      }
    };
  }

  /** The feature a route describes. */
  static IdempotencyFeature feature(Route route) {
    IdempotencyFeature.Builder builder = IdempotencyFeature.builder(route.once())
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
    return IdempotencyFeature.class.getName();
  }

  /** Stands in for an authentication filter: the {@code X-User} header becomes the principal. */
  static final class XUserAuthentication implements ContainerRequestFilter {
    @Override
    public void filter(ContainerRequestContext request) {
      String user = request.getHeaderString("X-User");
      if (user == null) {
        return;
      }
      Principal principal = () -> user;
      SecurityContext original = request.getSecurityContext();
      request.setSecurityContext(new SecurityContext() {
        @Override
        public Principal getUserPrincipal() {
          return principal;
        }

        @Override
        public boolean isUserInRole(String role) {
          return false;
        }

        @Override
        public boolean isSecure() {
          return original != null && original.isSecure();
        }

        @Override
        public String getAuthenticationScheme() {
          return "X-User";
        }
      });
    }
  }
}
