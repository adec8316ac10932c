package dev.once.spring.internal;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JavaType;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.once.Codec;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.Type;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.springframework.http.HttpEntity;
import org.springframework.http.HttpHeaders;
import org.springframework.http.ResponseEntity;

/**
 * A controller's {@link ResponseEntity} (or {@link HttpEntity}) stored as what a client saw: the
 * status, the headers the servlet filter also replays by default ({@link #REPLAYED_HEADERS}:
 * never a {@code Set-Cookie}), and the body as JSON of its declared type (resolved against the
 * bean's class, so a generic base controller's {@code T} is known). A stored status always
 * replays as a {@code ResponseEntity}. The replay marker is added by the caller, which knows
 * whether this response is the replay of a request.
 */
final class HttpEntityCodec implements Codec<Object> {

  /**
   * The headers stored and replayed: the servlet filter's defaults (copied here, so an
   * application without the servlet API can return a {@code ResponseEntity} too).
   */
  static final List<String> REPLAYED_HEADERS = List.of("Content-Type", "Content-Language",
      "Content-Location", "Location", "ETag", "Last-Modified", "Link");

  private final ObjectMapper mapper;
  private final JavaType bodyType;

  private HttpEntityCodec(ObjectMapper mapper, JavaType bodyType) {
    this.mapper = mapper;
    this.bodyType = bodyType;
  }

  /** For a body of the resolved type {@code body} (see {@link IdempotentMethod#codec}). */
  static Codec<Object> of(ObjectMapper mapper, Type body) {
    return new HttpEntityCodec(mapper, mapper.getTypeFactory().constructType(body));
  }

  @Override
  public String mediaType() {
    return "application/json";
  }

  @Override
  public byte[] encode(Object value) {
    HttpEntity<?> entity = (HttpEntity<?>) value;
    ObjectNode stored = mapper.createObjectNode();
    if (entity instanceof ResponseEntity<?> r) {
      stored.put("status", r.getStatusCode().value());
    }
    ObjectNode headers = stored.putObject("headers");
    for (String name : REPLAYED_HEADERS) {
      List<String> values = entity.getHeaders().get(name);
      if (values != null && !values.isEmpty()) {
        values.forEach(headers.putArray(name)::add);
      }
    }
    stored.set("body", mapper.valueToTree(entity.getBody()));
    try {
      return mapper.writeValueAsBytes(stored);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("cannot store the response: " + e.getMessage(), e);
    }
  }

  @Override
  public Object decode(byte[] bytes) {
    JsonNode stored;
    try {
      stored = mapper.readTree(bytes);
    } catch (IOException e) {
      throw new UncheckedIOException("stored response is not valid JSON", e);
    }
    HttpHeaders headers = new HttpHeaders();
    for (Iterator<Map.Entry<String, JsonNode>> it = stored.path("headers").fields();
        it.hasNext();) {
      Map.Entry<String, JsonNode> header = it.next();
      header.getValue().forEach(v -> headers.add(header.getKey(), v.asText()));
    }
    JsonNode bodyNode = stored.path("body");
    Object body = bodyNode.isMissingNode() || bodyNode.isNull() ? null
        : mapper.convertValue(bodyNode, bodyType);
    return stored.has("status")
        ? ResponseEntity.status(stored.get("status").asInt()).headers(headers).body(body)
        : new HttpEntity<>(body, headers);
  }
}
