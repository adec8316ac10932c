package dev.once.spring;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.once.spring.kafka.OnceKafkaProperties;
import dev.once.spring.rabbitmq.OnceRabbitProperties;
import java.io.InputStream;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.StreamSupport;
import org.junit.jupiter.api.Test;
import org.springframework.beans.BeanWrapperImpl;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.MapConfigurationPropertySource;

/**
 * Issue 24: 30 of the starter's 57 configuration properties showed no default in an IDE (their
 * defaults come from constants the metadata processor cannot read). Every property now has its
 * default in the metadata, and that default is the one the properties really bind to — or is one
 * of the few that have none, each for a reason given in its description.
 */
class ConfigurationMetadataTest {

  /** Properties whose default is "none": derived at run time, or optional. */
  private static final Set<String> NO_DEFAULT = Set.of(
      "once.http.max-response-bytes",    // unbounded unless set
      "once.http.tenant-header",         // no tenants unless set
      "once.jdbc.dialect",               // detected on the first call
      "once.kafka.scope",                // the consumer group id
      "once.rabbitmq.scope",             // the queue's name
      "once.rabbitmq.key-header",        // the message-id property
      "once.rabbitmq.dead-letter.exchange",    // required by a listener that dead-letters
      "once.rabbitmq.dead-letter.routing-key"); // the queue's name

  @Test
  void everyPropertyHasItsRealDefaultInTheMetadata() throws Exception {
    JsonNode metadata;
    try (InputStream in = getClass().getResourceAsStream(
        "/META-INF/spring-configuration-metadata.json")) {
      metadata = new ObjectMapper().readTree(in);
    }
    List<JsonNode> properties = StreamSupport.stream(metadata.get("properties").spliterator(),
        false).toList();
    assertThat(properties).hasSizeGreaterThan(50);
    for (JsonNode property : properties) {
      String name = property.get("name").asText();
      if (NO_DEFAULT.contains(name)) {
        assertThat(property.has("defaultValue")).as(name).isFalse();
        continue;
      }
      assertThat(property.has("defaultValue")).as("%s has a default in the metadata", name)
          .isTrue();
      Object real = read(name);
      Object declared = bind(name, property.get("defaultValue"));
      assertThat(String.valueOf(declared)).as("the metadata's default of %s", name)
          .isEqualTo(String.valueOf(real));
    }
  }

  /** The value a fresh properties object has for {@code name}. */
  private static Object read(String name) {
    Object root = root(name);
    String path = name.substring(prefix(name).length() + 1);
    BeanWrapperImpl bean = new BeanWrapperImpl(root);
    return bean.getPropertyValue(camel(path));
  }

  /** What {@code name} binds to when set to the metadata's default. */
  private static Object bind(String name, JsonNode value) {
    Map<String, Object> source = new HashMap<>();
    if (value.isArray()) {
      for (int i = 0; i < value.size(); i++) {
        source.put(name + "[" + i + "]", value.get(i).asText());
      }
    } else {
      source.put(name, value.asText());
    }
    if (value.isArray() && value.isEmpty()) {
      source.put(name, "");
    }
    Object bound = new Binder(new MapConfigurationPropertySource(source))
        .bind(prefix(name), Bindable.ofInstance(root(name))).get();
    return new BeanWrapperImpl(bound).getPropertyValue(
        camel(name.substring(prefix(name).length() + 1)));
  }

  private static String prefix(String name) {
    return name.startsWith("once.kafka.") ? "once.kafka"
        : name.startsWith("once.rabbitmq.") ? "once.rabbitmq" : "once";
  }

  private static Object root(String name) {
    return switch (prefix(name)) {
      case "once.kafka" -> new OnceKafkaProperties();
      case "once.rabbitmq" -> new OnceRabbitProperties();
      default -> new OnceProperties();
    };
  }

  private static String camel(String path) {
    StringBuilder out = new StringBuilder();
    boolean upper = false;
    for (char c : path.toCharArray()) {
      if (c == '-') {
        upper = true;
      } else {
        out.append(upper ? Character.toUpperCase(c) : c);
        upper = false;
      }
    }
    return out.toString();
  }
}
