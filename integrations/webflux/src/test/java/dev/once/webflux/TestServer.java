package dev.once.webflux;

import dev.once.testkit.http.ContractServer;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.springframework.http.server.reactive.HttpHandler;
import org.springframework.http.server.reactive.ReactorHttpHandlerAdapter;
import org.springframework.web.server.WebFilter;
import org.springframework.web.server.WebHandler;
import org.springframework.web.server.handler.ResponseStatusExceptionHandler;
import org.springframework.web.server.adapter.WebHttpHandlerBuilder;
import reactor.netty.DisposableServer;
import reactor.netty.http.server.HttpServer;

/**
 * A Reactor Netty server on 127.0.0.1 and a free port, as Spring Boot runs a WebFlux application:
 * the filters in order, then one handler; errors out of them are answered by Spring's
 * {@link ResponseStatusExceptionHandler} (a {@code ResponseStatusException}'s status, else 500).
 */
final class TestServer implements ContractServer {

  private final DisposableServer server;

  private TestServer(DisposableServer server) {
    this.server = server;
  }

  static TestServer start(List<WebFilter> filters, WebHandler handler) {
    HttpHandler http = WebHttpHandlerBuilder.webHandler(handler)
        .filters(list -> list.addAll(new ArrayList<>(filters)))
        .exceptionHandler(new ResponseStatusExceptionHandler())
        .build();
    DisposableServer server = HttpServer.create().host("127.0.0.1").port(0)
        .handle(new ReactorHttpHandlerAdapter(http))
        .bindNow(Duration.ofSeconds(20));
    return new TestServer(server);
  }

  @Override
  public int port() {
    return server.port();
  }

  URI uri(String pathAndQuery) {
    return URI.create("http://127.0.0.1:" + port() + pathAndQuery);
  }

  @Override
  public void close() {
    server.disposeNow(Duration.ofSeconds(10));
  }
}
