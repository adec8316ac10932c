package dev.once.spring.internal;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JavaType;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.once.Codec;
import dev.once.servlet.IdempotencyFilter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.springframework.http.HttpEntity;
import org.springframework.http.HttpHeaders;
import org.springframework.http.ResponseEntity;

/**
 * A controller's {@link ResponseEntity} (or {@link HttpEntity}) stored as what a client saw: the
 * status, the headers the servlet filter also replays ({@link
 * IdempotencyFilter#DEFAULT_REPLAY_HEADERS}: never a {@code Set-Cookie}), and the body as JSON of
 * its declared type. Decoded only for replays, so the entity it makes carries
 * {@code Idempotent-Replayed: true}, as the filter's replays do.
 */
final class HttpEntityCodec implements Codec<Object> {

  private final ObjectMapper mapper;
  private final JavaType bodyType;
  private final boolean response;

  private HttpEntityCodec(ObjectMapper mapper, JavaType bodyType, boolean response) {
    this.mapper = mapper;
    this.bodyType = bodyType;
    this.response = response;
  }

  /** For a method declared to return {@code type}, an {@code HttpEntity} or a subtype. */
  static Codec<Object> of(ObjectMapper mapper, Class<?> raw, Type type) {
    Type body = type instanceof ParameterizedType p ? p.getActualTypeArguments()[0] : Object.class;
    return new HttpEntityCodec(mapper, mapper.getTypeFactory().constructType(body),
        ResponseEntity.class.isAssignableFrom(raw));
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
    for (String name : IdempotencyFilter.DEFAULT_REPLAY_HEADERS) {
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
    headers.set(IdempotencyFilter.REPLAYED_HEADER, "true");
    JsonNode bodyNode = stored.path("body");
    Object body = bodyNode.isMissingNode() || bodyNode.isNull() ? null
        : mapper.convertValue(bodyNode, bodyType);
    return response
        ? ResponseEntity.status(stored.path("status").asInt(200)).headers(headers).body(body)
        : new HttpEntity<>(body, headers);
  }
}
