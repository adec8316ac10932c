package dev.once.webflux;

import dev.once.Attempt;
import dev.once.Codecs;
import dev.once.testkit.http.ContractApp;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.springframework.core.io.buffer.DataBufferUtils;
import org.springframework.http.HttpStatus;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseCookie;
import org.springframework.http.server.reactive.ServerHttpRequest;
import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.web.server.ResponseStatusException;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebHandler;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * The contract's application ({@link ContractApp}) as a plain reactive {@link WebHandler}. Nothing
 * here blocks the thread it is called on: waits at a gate and durable steps (which write to the
 * store) move to {@link Schedulers#boundedElastic()}, as a reactive application would.
 */
final class ContractHandler implements WebHandler {

  private final ContractApp app;

  ContractHandler(ContractApp app) {
    this.app = app;
  }

  @Override
  public Mono<Void> handle(ServerWebExchange exchange) {
    ServerHttpRequest request = exchange.getRequest();
    ServerHttpResponse res = exchange.getResponse();
    String key = String.valueOf(request.getHeaders().getFirst("Idempotency-Key"));
    String user = request.getHeaders().getFirst("X-User");
    String caller = user != null ? user
        : String.valueOf(request.getHeaders().getFirst("X-Api-Key"));
    ContractApp.Handled handled = app.handled(caller, key);
    int n = handled.execution();
    int serial = handled.serial();
    String[] segments = request.getPath().value().split("/");
    String action = segments[segments.length - 1];
    String previous = segments.length > 1 ? segments[segments.length - 2] : "";

    if (request.getMethod().name().equals("GET")) {
      return text(res, 200, "get " + serial);
    }
    switch (previous) {
      case "status":
        return text(res, Integer.parseInt(action), "status " + action + " #" + serial);
      case "flushed", "held": {
        // Declares its length and flushes, as a streaming handler does: without the filter
        // holding the answer back, the client has all of it before the handler completes.
        byte[] body = filled(Integer.parseInt(action), previous.equals("held") ? 'h' : 'f');
        res.getHeaders().setContentType(MediaType.APPLICATION_OCTET_STREAM);
        res.getHeaders().setContentLength(body.length);
        Mono<Void> written =
            res.writeAndFlushWith(Flux.just(Mono.just(res.bufferFactory().wrap(body))));
        return previous.equals("held") ? written.then(pass(key)) : written;
      }
      case "big": {
        // Streams in 8 KB chunks, as written.
        int size = Integer.parseInt(action);
        res.getHeaders().setContentType(MediaType.APPLICATION_OCTET_STREAM);
        return res.writeWith(Flux.range(0, (size + 8191) / 8192).map(i -> res.bufferFactory()
            .wrap(filled(Math.min(8192, size - i * 8192), 'x'))));
      }
      default:
        break;
    }
    switch (action) {
      case "charges":
        return body(exchange).flatMap(body -> {
          res.setStatusCode(HttpStatus.CREATED);
          res.getHeaders().setContentType(MediaType.APPLICATION_JSON);
          res.getHeaders().set("Location", "/api/charges/ch_" + serial);
          res.getHeaders().set("X-Execution", Integer.toString(n));
          res.addCookie(ResponseCookie.from("session", "s" + serial).build());
          return write(res, "{\"id\":\"ch_" + serial + "\",\"request\":" + body + "}");
        });
      case "slow":
        // Only the first execution of a key hangs: it stands for a worker that stalls or dies.
        if (n > 1) {
          app.gate(key).entered.countDown();
          return text(res, 200, "slow #" + serial);
        }
        return pass(key).then(Mono.defer(() -> text(res, 200, "slow #" + serial)));
      case "boom":
        if (app.failsOnce(key)) {
          return Mono.error(new IllegalStateException("handler crashed on purpose"));
        }
        return text(res, 200, "recovered #" + serial);
      case "writer":
        res.getHeaders().setContentType(MediaType.parseMediaType("text/plain;charset=UTF-8"));
        return res.writeAndFlushWith(Flux.just("héllo ✓ #" + serial, " and more")
            .map(s -> Mono.just(res.bufferFactory().wrap(s.getBytes(StandardCharsets.UTF_8)))));
      case "form":
        return exchange.getFormData().flatMap(form -> text(res, 200, "a=" + form.getFirst("a")
            + " b=" + form.get("b") + " q=" + request.getQueryParams().getFirst("q")
            + " #" + serial));
      case "reader":
        return body(exchange).flatMap(body -> text(res, 200, "read " + body + " #" + serial));
      case "redirect":
        res.setStatusCode(HttpStatus.SEE_OTHER);
        res.getHeaders().set("Location", "/api/elsewhere/" + serial);
        return res.setComplete();
      case "senderror":
        // Through the framework's error path (its exception handler), outside the response.
        return Mono.error(new ResponseStatusException(HttpStatus.NOT_FOUND, "nothing here"));
      case "context":
        // Not one of the contract's routes: what an earlier filter wrote to the Reactor Context.
        return Mono.deferContextual(context -> text(res, 200, "context "
            + context.getOrDefault(TestAuthFilter.CONTEXT_KEY, "none") + " #" + serial));
      case "attempt":
        return text(res, 200, IdempotencyWebFilter.attempt(exchange).map(Attempt::key)
            .orElse("none"));
      case "stepped": {
        // A durable step, then a 503 the first time: the response is not stored and the retry
        // runs the handler again, but not the step.
        Attempt attempt = IdempotencyWebFilter.attempt(exchange).orElseThrow();
        return Mono.fromCallable(() -> attempt.step("mail", Codecs.utf8(), k -> app.mail(key)))
            .subscribeOn(Schedulers.boundedElastic())
            .flatMap(mail -> text(res, n == 1 ? 503 : 200, mail));
      }
      default:
        return text(res, 200, "ok #" + serial);
    }
  }

  private Mono<Void> pass(String key) {
    return Mono.<Void>fromRunnable(() -> app.gate(key).pass())
        .subscribeOn(Schedulers.boundedElastic());
  }

  private static Mono<String> body(ServerWebExchange exchange) {
    return DataBufferUtils.join(exchange.getRequest().getBody())
        .map(buffer -> {
          String text = buffer.toString(StandardCharsets.UTF_8);
          DataBufferUtils.release(buffer);
          return text;
        })
        .defaultIfEmpty("");
  }

  private static byte[] filled(int size, char c) {
    byte[] body = new byte[size];
    Arrays.fill(body, (byte) c);
    return body;
  }

  private static Mono<Void> text(ServerHttpResponse res, int status, String body) {
    res.setStatusCode(HttpStatusCode.valueOf(status));
    res.getHeaders().setContentType(MediaType.parseMediaType("text/plain;charset=UTF-8"));
    return write(res, body);
  }

  private static Mono<Void> write(ServerHttpResponse res, String body) {
    return res.writeWith(Mono.fromSupplier(
        () -> res.bufferFactory().wrap(body.getBytes(StandardCharsets.UTF_8))));
  }
}
