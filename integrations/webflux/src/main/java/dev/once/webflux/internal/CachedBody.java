package dev.once.webflux.internal;

import java.util.Map;
import org.springframework.core.ResolvableType;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.core.io.buffer.DataBufferLimitException;
import org.springframework.core.io.buffer.DataBufferUtils;
import org.springframework.core.io.buffer.DefaultDataBufferFactory;
import org.springframework.http.MediaType;
import org.springframework.http.codec.FormHttpMessageReader;
import org.springframework.http.server.reactive.ServerHttpRequest;
import org.springframework.http.server.reactive.ServerHttpRequestDecorator;
import org.springframework.util.LinkedMultiValueMap;
import org.springframework.util.MultiValueMap;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.ServerWebExchangeDecorator;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The request body, read once to fingerprint it, and the exchange that serves it again to the
 * application: {@code getRequest().getBody()} and, for {@code application/x-www-form-urlencoded},
 * {@code getFormData()}, parsed from the copy (the exchange's own would read the consumed body).
 * Multipart data cannot be served again: leave multipart routes unprotected.
 */
public final class CachedBody {

  private static final ResolvableType FORM_TYPE =
      ResolvableType.forClassWithGenerics(MultiValueMap.class, String.class, String.class);

  private CachedBody() {}

  /**
   * The whole body of {@code request}, at most {@code limit} bytes; an empty array for none.
   *
   * @return the body, or empty if it is longer than {@code limit}
   */
  public static Mono<byte[]> read(ServerHttpRequest request, int limit) {
    if (request.getHeaders().getContentLength() > limit) {
      return Mono.empty();
    }
    return DataBufferUtils.join(request.getBody(), limit)
        .map(buffer -> {
          try {
            byte[] bytes = new byte[buffer.readableByteCount()];
            buffer.read(bytes);
            return bytes;
          } finally {
            DataBufferUtils.release(buffer);
          }
        })
        .defaultIfEmpty(new byte[0])
        .onErrorResume(DataBufferLimitException.class, e -> Mono.empty());
  }

  /** {@code exchange} whose request body is {@code body}, served as often as it is read. */
  public static ServerWebExchange exchange(ServerWebExchange exchange, byte[] body) {
    ServerHttpRequest request = new ServerHttpRequestDecorator(exchange.getRequest()) {
      @Override
      public Flux<DataBuffer> getBody() {
        return body.length == 0 ? Flux.empty()
            : Flux.defer(() -> Flux.just(DefaultDataBufferFactory.sharedInstance.wrap(body)));
      }
    };
    Mono<MultiValueMap<String, String>> form = isForm(request)
        ? new FormHttpMessageReader().readMono(FORM_TYPE, request, Map.of())
            .defaultIfEmpty(new LinkedMultiValueMap<>()).cache()
        : Mono.just(new LinkedMultiValueMap<>());
    ServerWebExchange withBody = exchange.mutate().request(request).build();
    return new ServerWebExchangeDecorator(withBody) {
      @Override
      public Mono<MultiValueMap<String, String>> getFormData() {
        return form;
      }
    };
  }

  private static boolean isForm(ServerHttpRequest request) {
    MediaType type;
    try {
      type = request.getHeaders().getContentType();
    } catch (RuntimeException invalid) {
      return false;
    }
    return type != null && MediaType.APPLICATION_FORM_URLENCODED.isCompatibleWith(type);
  }
}
