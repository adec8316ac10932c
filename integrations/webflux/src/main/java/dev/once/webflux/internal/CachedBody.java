package dev.once.webflux.internal;

import java.net.URLEncoder;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
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
 * Multipart data cannot be served again: leave multipart routes unprotected (and a multipart
 * body an earlier filter consumed with {@code getMultipartData()} reads as empty).
 */
public final class CachedBody {

  private static final ResolvableType FORM_TYPE =
      ResolvableType.forClassWithGenerics(MultiValueMap.class, String.class, String.class);

  private CachedBody() {}

  /**
   * The whole body of the exchange's request, at most {@code limit} bytes; an empty array for
   * none. A form an earlier filter already parsed ({@code getFormData()}, as Spring Security's
   * {@code CsrfWebFilter} does) consumed the body: it is then taken from the exchange's parsed
   * form, encoded again ({@code application/x-www-form-urlencoded}, in its order), so the
   * application and the fingerprint see the form and not an empty body.
   *
   * @return the body, or empty if it is longer than {@code limit}
   */
  public static Mono<byte[]> read(ServerWebExchange exchange, int limit) {
    ServerHttpRequest request = exchange.getRequest();
    if (request.getHeaders().getContentLength() > limit) {
      return Mono.empty();
    }
    Mono<byte[]> raw = DataBufferUtils.join(request.getBody(), limit)
        .map(buffer -> {
          try {
            byte[] bytes = new byte[buffer.readableByteCount()];
            buffer.read(bytes);
            return bytes;
          } finally {
            DataBufferUtils.release(buffer);
          }
        })
        .defaultIfEmpty(new byte[0]);
    if (isForm(request) && request.getHeaders().getContentLength() != 0) {
      raw = raw.flatMap(bytes -> bytes.length > 0 ? Mono.just(bytes) : parsedForm(exchange))
          // the body was consumed and not parsed: an empty form as before
          .onErrorResume(e -> !(e instanceof DataBufferLimitException), e -> parsedForm(exchange));
    }
    return raw
        .flatMap(bytes -> bytes.length > limit ? Mono.<byte[]>empty() : Mono.just(bytes))
        .onErrorResume(DataBufferLimitException.class, e -> Mono.empty());
  }

  /** The exchange's own parsed form, encoded again; empty bytes if there is none. */
  private static Mono<byte[]> parsedForm(ServerWebExchange exchange) {
    Charset charset = charset(exchange.getRequest());
    return exchange.getFormData()
        .map(form -> encode(form, charset))
        .onErrorResume(e -> Mono.just(new byte[0]))
        .defaultIfEmpty(new byte[0]);
  }

  private static byte[] encode(MultiValueMap<String, String> form, Charset charset) {
    StringBuilder out = new StringBuilder();
    form.forEach((name, values) -> {
      for (String value : values) {
        if (out.length() > 0) {
          out.append('&');
        }
        out.append(URLEncoder.encode(name, charset));
        if (value != null) {
          out.append('=').append(URLEncoder.encode(value, charset));
        }
      }
    });
    return out.toString().getBytes(charset);
  }

  private static Charset charset(ServerHttpRequest request) {
    try {
      MediaType type = request.getHeaders().getContentType();
      return type != null && type.getCharset() != null ? type.getCharset()
          : StandardCharsets.UTF_8;
    } catch (RuntimeException invalid) {
      return StandardCharsets.UTF_8;
    }
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
