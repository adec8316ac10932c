package dev.once.spring.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.Attempt;
import dev.once.FailurePolicy;
import dev.once.IdempotencyKey;
import dev.once.InMemoryStore;
import dev.once.Once;
import dev.once.batch.DeadLetterPublisher;
import dev.once.kafka.DeadLetterHeaders;
import dev.once.kafka.IdempotentConsumer;
import dev.once.kafka.spring.KafkaTemplateDeadLetterPublisher;
import dev.once.kafka.spring.OnceRecordListener;
import dev.once.spring.OnceBuilderCustomizer;
import dev.once.spring.autoconfigure.OnceAutoConfiguration;
import dev.once.spring.autoconfigure.OnceKafkaAutoConfiguration;
import dev.once.testkit.Await;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.kafka.autoconfigure.KafkaAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.kafka.config.ConcurrentKafkaListenerContainerFactory;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.listener.ConcurrentMessageListenerContainer;
import org.springframework.kafka.listener.ContainerProperties;

/**
 * The Kafka auto-configuration: its beans and when they back off, and a container made from Spring
 * Boot's listener container factory with the listener bean, against a real broker (in this JVM).
 */
class OnceKafkaAutoConfigurationTest {

  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(OnceAutoConfiguration.class,
          KafkaAutoConfiguration.class, OnceKafkaAutoConfiguration.class))
      .withPropertyValues("once.store=memory");

  // --8<-- [start:kafka]
  /** A container from Spring Boot's factory whose batch listener ships each order once. */
  @Configuration(proxyBeanMethods = false)
  static class OrdersListener {

    @Bean
    ConcurrentMessageListenerContainer<String, String> ordersContainer(
        ConcurrentKafkaListenerContainerFactory<String, String> factory, OnceKafkaListeners once,
        Shipping shipping, @Value("${orders.topic}") String topic,
        @Value("${orders.group}") String group) {
      ConcurrentMessageListenerContainer<String, String> container = factory.createContainer(topic);
      container.getContainerProperties().setGroupId(group);    // the keys' scope too
      container.getContainerProperties().setAckMode(ContainerProperties.AckMode.MANUAL);
      container.setupMessageListener(once.batchListener(      // or once.recordListener(...)
          (ConsumerRecord<String, String> record, Attempt attempt) ->
              shipping.ship(record.value(), attempt.key())));  // the key for downstream dedup
      return container;
    }
  }
  // --8<-- [end:kafka]

  /** The side effect: records each shipment; "poison" fails terminally, "broken" always. */
  static class Shipping {
    final Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
    final Map<String, AtomicInteger> shipped = new ConcurrentHashMap<>();

    void ship(String order, String key) {
      runs.computeIfAbsent(order, o -> new AtomicInteger()).incrementAndGet();
      if (order.startsWith("poison")) {
        throw new PoisonException("cannot parse " + order);
      }
      if (order.startsWith("broken")) {
        throw new IllegalStateException("downstream refuses " + order);
      }
      shipped.computeIfAbsent(order, o -> new AtomicInteger()).incrementAndGet();
    }

    int runs(String order) {
      AtomicInteger n = runs.get(order);
      return n == null ? 0 : n.get();
    }
  }

  static class PoisonException extends RuntimeException {
    PoisonException(String message) {
      super(message);
    }
  }

  private ApplicationContextRunner withBroker(String topic, String group) {
    return runner
        .withUserConfiguration(OrdersListener.class)
        .withBean(Shipping.class, Shipping::new)
        .withBean(OnceBuilderCustomizer.class, () -> builder -> builder
            .failurePolicy(FailurePolicy.retryAll().terminalOn(PoisonException.class)))
        .withPropertyValues("spring.kafka.bootstrap-servers=" + KafkaBroker.bootstrapServers(),
            "spring.kafka.consumer.auto-offset-reset=earliest",
            "spring.kafka.producer.acks=all",
            "spring.kafka.listener.poll-timeout=100ms", // a quick stop
            "orders.topic=" + topic, "orders.group=" + group);
  }

  @Test
  void aContainerFromBootsFactoryShipsProducerDuplicatesOnce() {
    String topic = KafkaBroker.topic(KafkaBroker.unique("orders"), 2);
    String group = KafkaBroker.unique("shipping");
    for (int i = 0; i < 10; i++) {
      KafkaBroker.send(topic, i % 2, "k" + i, "e" + i);
      KafkaBroker.send(topic, i % 2, "k" + i, "e" + i); // the producer's retry
    }
    withBroker(topic, group).run(context -> {
      assertThat(context).hasNotFailed();
      Shipping shipping = context.getBean(Shipping.class);
      Await.until("every record committed", Duration.ofSeconds(60),
          () -> Map.of(0, 10L, 1, 10L).equals(KafkaBroker.committed(group)),
          () -> KafkaBroker.committed(group) + " " + shipping.shipped);
      assertThat(shipping.shipped).hasSize(10)
          .allSatisfy((order, n) -> assertThat(n).hasValue(1));
      assertThat(shipping.runs).allSatisfy((order, n) -> assertThat(n).hasValue(1));
      // Keys are scoped by the container's group id.
      assertThat(context.getBean(Once.class).store().find(IdempotencyKey.of(group, "k3")))
          .isPresent();
      assertThat(KafkaBroker.endOffset(topic + "-dlt")).as("no dead letter").isZero();
    });
  }

  @Test
  void poisonIsDeadLetteredThroughTheKafkaTemplateWithTheHeaders() {
    String topic = KafkaBroker.topic(KafkaBroker.unique("payments"), 1);
    String group = KafkaBroker.unique("billing");
    KafkaBroker.send(topic, 0, "k0", "e0");
    KafkaBroker.send(topic, 0, "k1", "poison-1");
    KafkaBroker.send(topic, 0, "k2", "broken-2");
    KafkaBroker.send(topic, 0, "k3", "e3");
    withBroker(topic, group)
        .withPropertyValues("once.kafka.max-attempts=2",
            "once.kafka.retry-backoff.initial=10ms", "once.kafka.retry-backoff.max=50ms")
        .run(context -> {
          assertThat(context).hasNotFailed();
          assertThat(context.getBean(DeadLetterPublisher.class))
              .isInstanceOf(KafkaTemplateDeadLetterPublisher.class);
          Shipping shipping = context.getBean(Shipping.class);
          Await.until("four records committed", Duration.ofSeconds(60),
              () -> Long.valueOf(4).equals(KafkaBroker.committed(group).get(0)),
              () -> KafkaBroker.committed(group) + " runs " + shipping.runs);

          List<ConsumerRecord<String, String>> dead = KafkaBroker.readAll(topic + "-dlt", 2);
          assertThat(dead).extracting(ConsumerRecord::value)
              .containsExactly("poison-1", "broken-2");
          ConsumerRecord<String, String> poison = dead.get(0);
          assertThat(KafkaBroker.header(poison, DeadLetterHeaders.REASON))
              .isEqualTo("TERMINAL_FAILURE");
          assertThat(KafkaBroker.header(poison, DeadLetterHeaders.ORIGINAL_TOPIC)).isEqualTo(topic);
          assertThat(KafkaBroker.header(poison, DeadLetterHeaders.ORIGINAL_OFFSET)).isEqualTo("1");
          assertThat(KafkaBroker.header(poison, DeadLetterHeaders.IDEMPOTENCY_KEY)).isEqualTo("k1");
          assertThat(KafkaBroker.header(poison, DeadLetterHeaders.EXCEPTION_CLASS))
              .isEqualTo(PoisonException.class.getName());
          assertThat(KafkaBroker.header(poison, DeadLetterHeaders.EXCEPTION_MESSAGE))
              .isEqualTo("cannot parse poison-1");
          assertThat(KafkaBroker.header(poison, DeadLetterHeaders.ATTEMPTS)).isEqualTo("1");
          assertThat(KafkaBroker.header(poison, "idempotency-key")).isEqualTo("k1");
          ConsumerRecord<String, String> broken = dead.get(1);
          assertThat(KafkaBroker.header(broken, DeadLetterHeaders.REASON))
              .isEqualTo("RETRIES_EXHAUSTED");
          assertThat(KafkaBroker.header(broken, DeadLetterHeaders.ATTEMPTS)).isEqualTo("2");

          // A duplicate of the dead-lettered record replays its stored failure.
          KafkaBroker.send(topic, 0, "k1", "poison-1");
          Await.until("the duplicate committed", Duration.ofSeconds(60),
              () -> Long.valueOf(5).equals(KafkaBroker.committed(group).get(0)),
              () -> KafkaBroker.committed(group).toString());
          assertThat(KafkaBroker.endOffset(topic + "-dlt")).as("no second dead letter")
              .isEqualTo(2);
          assertThat(shipping.runs("poison-1")).isOne();
          assertThat(shipping.runs("broken-2")).isEqualTo(2);
          assertThat(shipping.shipped).containsOnlyKeys("e0", "e3")
              .allSatisfy((order, n) -> assertThat(n).hasValue(1));
        });
  }

  @Test
  void propertiesFillTheConsumerBuilder() {
    runner.withPropertyValues("once.kafka.scope=orders-scope", "once.kafka.key-header=event-id",
            "once.kafka.dead-letter.topic-suffix=.dead", "once.kafka.dead-letter.send-timeout=7s")
        .run(context -> {
          assertThat(context).hasNotFailed();
          KafkaTemplateDeadLetterPublisher<?, ?> publisher =
              context.getBean(KafkaTemplateDeadLetterPublisher.class);
          assertThat(publisher.timeout()).isEqualTo(Duration.ofSeconds(7));
          OnceKafkaListeners listeners = context.getBean(OnceKafkaListeners.class);
          assertThat(listeners.once()).isSameAs(context.getBean(Once.class));
          IdempotentConsumer<String, String> consumer = listeners
              .<String, String>consumer((record, attempt) -> { }).build();
          assertThat(consumer.once()).isSameAs(context.getBean(Once.class));
          assertThat(listeners.recordListener((ConsumerRecord<String, String> r, Attempt a) -> { }))
              .isInstanceOf(OnceRecordListener.class);
        });
  }

  @Test
  void badPropertiesFailTheStartupWithTheBuildersMessage() {
    runner.withPropertyValues("once.kafka.retry-backoff.initial=10s",
            "once.kafka.retry-backoff.max=1s")
        .run(context -> assertThat(context.getStartupFailure()).rootCause()
            .hasMessageContaining("below initial"));
    runner.withPropertyValues("once.kafka.max-attempts=0")
        .run(context -> assertThat(context.getStartupFailure()).rootCause()
            .hasMessageContaining("maxAttempts"));
    runner.withPropertyValues("once.kafka.scope=not a scope\u00e9")
        .run(context -> assertThat(context).hasFailed());
    runner.withPropertyValues("once.kafka.dead-letter.topic-suffix=")
        .run(context -> assertThat(context.getStartupFailure()).rootCause()
            .hasMessageContaining("topic-suffix"));
  }

  @Test
  void withoutSpringKafkaOrOnceKafkaTheBeansAreAbsent() {
    runner.withClassLoader(new FilteredClassLoader(KafkaTemplate.class)).run(context -> {
      assertThat(context).hasNotFailed().hasSingleBean(Once.class);
      assertThat(context).doesNotHaveBean(OnceKafkaListeners.class)
          .doesNotHaveBean(DeadLetterPublisher.class);
    });
    runner.withClassLoader(new FilteredClassLoader(IdempotentConsumer.class)).run(context -> {
      assertThat(context).hasNotFailed().hasSingleBean(Once.class);
      assertThat(context).doesNotHaveBean(OnceKafkaListeners.class);
    });
  }

  @Test
  void switchedOffOrWithoutAOnceTheBeansAreAbsent() {
    runner.withPropertyValues("once.kafka.enabled=false").run(context -> assertThat(context)
        .hasNotFailed().doesNotHaveBean(OnceKafkaListeners.class)
        .doesNotHaveBean(DeadLetterPublisher.class));
    runner.withPropertyValues("once.enabled=false").run(context -> assertThat(context)
        .hasNotFailed().doesNotHaveBean(Once.class).doesNotHaveBean(OnceKafkaListeners.class));
  }

  @Test
  void theApplicationsBeansWin() {
    DeadLetterPublisher<ConsumerRecord<String, String>> own = letter -> { };
    runner.withBean("myDeadLetters", DeadLetterPublisher.class, () -> own).run(context -> {
      assertThat(context).hasNotFailed().doesNotHaveBean(KafkaTemplateDeadLetterPublisher.class);
      assertThat(context.getBean(DeadLetterPublisher.class)).isSameAs(own);
      // The listeners use it: a consumer builds without being given a publisher.
      assertThat(context.getBean(OnceKafkaListeners.class)
          .<String, String>consumer((r, a) -> { }).build()).isNotNull();
    });
    runner.withBean("myListeners", OnceKafkaListeners.class,
            () -> new OnceKafkaListeners(Once.builder(new InMemoryStore()).build(),
                new OnceKafkaProperties(), null))
        .run(context -> {
          assertThat(context).hasNotFailed().hasSingleBean(OnceKafkaListeners.class);
          assertThat(context.getBean(OnceKafkaListeners.class).once())
              .isNotSameAs(context.getBean(Once.class));
        });
  }

  /**
   * Core's publisher type is every broker's: an application's RabbitMQ or SQS publisher bean must
   * neither switch off the Kafka template publisher nor be handed Kafka records (a cast that would
   * fail at the first dead letter, and retry the record forever).
   */
  @Test
  void anotherBrokersPublisherBeanIsNotKafkas() {
    runner.withUserConfiguration(AnotherBrokersDeadLetters.class).run(context -> {
      assertThat(context).hasNotFailed().hasSingleBean(KafkaTemplateDeadLetterPublisher.class);
      OnceKafkaListeners listeners = context.getBean(OnceKafkaListeners.class);
      assertThat(listeners.<String, String>consumer((r, a) -> { }).build()).isNotNull();
    });
    // With a Kafka publisher of its own beside it, the application's Kafka one is used.
    DeadLetterPublisher<ConsumerRecord<String, String>> own = letter -> { };
    runner.withUserConfiguration(AnotherBrokersDeadLetters.class)
        .withBean("myDeadLetters", DeadLetterPublisher.class, () -> own).run(context -> {
          assertThat(context).hasNotFailed().doesNotHaveBean(KafkaTemplateDeadLetterPublisher.class);
          assertThat(context.getBean(OnceKafkaListeners.class)
              .<String, String>consumer((r, a) -> { }).build()).isNotNull();
        });
  }

  /** An application that also consumes another broker, with that broker's publisher bean. */
  @Configuration(proxyBeanMethods = false)
  static class AnotherBrokersDeadLetters {
    @Bean
    DeadLetterPublisher<String> rabbitDeadLetters() {
      return letter -> {
        throw new AssertionError("given a Kafka record: " + letter);
      };
    }
  }

  @Test
  void withoutAKafkaTemplateAListenerNeedsAPublisher() {
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(OnceAutoConfiguration.class,
            OnceKafkaAutoConfiguration.class))
        .withPropertyValues("once.store=memory")
        .run(context -> {
          assertThat(context).hasNotFailed().doesNotHaveBean(DeadLetterPublisher.class);
          OnceKafkaListeners listeners = context.getBean(OnceKafkaListeners.class);
          assertThatThrownBy(() -> listeners.batchListener((r, a) -> { }))
              .isInstanceOf(IllegalStateException.class)
              .hasMessageContaining("dead-letter publisher is required");
        });
  }
}
