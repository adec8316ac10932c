package dev.once.spring.rabbitmq;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.rabbitmq.client.GetResponse;
import dev.once.Attempt;
import dev.once.FailurePolicy;
import dev.once.IdempotencyKey;
import dev.once.InMemoryStore;
import dev.once.Once;
import dev.once.OnceListener;
import dev.once.rabbitmq.DeadLetterHeaders;
import dev.once.rabbitmq.spring.OnceRabbitListener;
import dev.once.spring.OnceBuilderCustomizer;
import dev.once.spring.autoconfigure.OnceAutoConfiguration;
import dev.once.spring.autoconfigure.OnceRabbitAutoConfiguration;
import dev.once.testkit.Await;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.amqp.core.AcknowledgeMode;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.rabbit.config.SimpleRabbitListenerContainerFactory;
import org.springframework.amqp.rabbit.listener.SimpleMessageListenerContainer;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.amqp.autoconfigure.RabbitAutoConfiguration;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The RabbitMQ auto-configuration: its bean and when it backs off, and a container made from
 * Spring Boot's listener container factory with a listener from the bean, against the real broker.
 */
class OnceRabbitAutoConfigurationTest {

  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(OnceAutoConfiguration.class,
          RabbitAutoConfiguration.class, OnceRabbitAutoConfiguration.class))
      .withPropertyValues("once.store=memory");

  private RabbitBroker.Topology topology;

  @AfterEach
  void deleteTopology() {
    if (topology != null) {
      RabbitBroker.delete(topology);
    }
  }

  // --8<-- [start:rabbitmq]
  /** A container from Spring Boot's factory whose listener ships each order once. */
  @Configuration(proxyBeanMethods = false)
  static class OrdersListener {

    @Bean
    SimpleMessageListenerContainer ordersContainer(SimpleRabbitListenerContainerFactory factory,
        OnceRabbitListeners once, Shipping shipping, @Value("${orders.queue}") String queue) {
      SimpleMessageListenerContainer container = factory.createListenerContainer();
      container.setQueueNames(queue);
      container.setAcknowledgeMode(AcknowledgeMode.MANUAL); // the listener acks what is final
      container.setReceiveTimeout(10); // with consumer batches: the wait for each further message
      container.setMessageListener(once.listener(queue,     // the keys' scope
          (Message message, Attempt attempt) ->
              shipping.ship(new String(message.getBody(), UTF_8), attempt.key())));
      return container;
    }
  }
  // --8<-- [end:rabbitmq]

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

  /** Counts the duplicates Once answered with a stored outcome. */
  static class Replays implements OnceListener {
    final AtomicInteger replayed = new AtomicInteger();

    @Override
    public void onReplayed(IdempotencyKey key) {
      replayed.incrementAndGet();
    }
  }

  private ApplicationContextRunner withBroker(RabbitBroker.Topology t) {
    return runner
        .withUserConfiguration(OrdersListener.class)
        .withBean(Shipping.class, Shipping::new)
        .withBean(Replays.class, Replays::new)
        .withBean(OnceBuilderCustomizer.class, () -> builder -> builder
            .failurePolicy(FailurePolicy.retryAll().terminalOn(PoisonException.class)))
        .withPropertyValues(RabbitBroker.springProperties())
        .withPropertyValues("orders.queue=" + t.queue(),
            "once.rabbitmq.dead-letter.exchange=" + t.deadLetterExchange());
  }

  @Test
  void aBatchingContainerFromBootsFactoryShipsDuplicatesOnce() {
    topology = RabbitBroker.topology("orders");
    String queue = topology.queue();
    AtomicReference<Shipping> shipped = new AtomicReference<>();
    withBroker(topology)
        .withPropertyValues("spring.rabbitmq.listener.simple.consumer-batch-enabled=true",
            "spring.rabbitmq.listener.simple.batch-size=10")
        .run(context -> {
          assertThat(context).hasNotFailed();
          assertThat(context.getBean(SimpleMessageListenerContainer.class).isConsumerBatchEnabled())
              .isTrue();
          Shipping shipping = context.getBean(Shipping.class);
          shipped.set(shipping);
          for (int i = 0; i < 10; i++) {
            RabbitBroker.publish(queue, "m" + i, "e" + i);
          }
          Await.until("10 orders shipped", Duration.ofSeconds(60),
              () -> shipping.shipped.size() == 10,
              () -> shipping.shipped.toString());
          for (int i = 0; i < 10; i++) {
            RabbitBroker.publish(queue, "m" + i, "e" + i); // the publisher's retries
          }
          Replays replays = context.getBean(Replays.class);
          Await.until("10 duplicates replayed", Duration.ofSeconds(60),
              () -> replays.replayed.get() == 10,
              () -> replays.replayed + " replayed, " + shipping.runs);
          assertThat(context.getBean(Once.class).store()
              .find(IdempotencyKey.of(queue, "m3"))).as("scoped by the queue").isPresent();
        });
    // The context closed: the container stopped, so anything unacknowledged went back to ready.
    assertThat(RabbitBroker.ready(queue)).as("everything acknowledged").isZero();
    assertThat(shipped.get().shipped).hasSize(10)
        .allSatisfy((order, n) -> assertThat(n).hasValue(1));
    assertThat(shipped.get().runs).allSatisfy((order, n) -> assertThat(n).hasValue(1));
    assertThat(RabbitBroker.ready(topology.deadLetterQueue())).as("no dead letter").isZero();
  }

  @Test
  void poisonGoesToTheDeadLetterExchangesQueue() {
    topology = RabbitBroker.topology("payments");
    String queue = topology.queue();
    AtomicReference<Shipping> shipped = new AtomicReference<>();
    withBroker(topology)
        .withPropertyValues("once.rabbitmq.max-attempts=2",
            "once.rabbitmq.retry-backoff.initial=10ms", "once.rabbitmq.retry-backoff.max=50ms")
        .run(context -> {
          assertThat(context).hasNotFailed();
          Shipping shipping = context.getBean(Shipping.class);
          shipped.set(shipping);
          RabbitBroker.publish(queue, "m0", "e0");
          RabbitBroker.publish(queue, "m1", "poison-1");
          RabbitBroker.publish(queue, "m2", "broken-2");
          RabbitBroker.publish(queue, "m3", "e3");

          List<GetResponse> dead = RabbitBroker.take(topology.deadLetterQueue(), 2);
          Map<String, GetResponse> byBody = new ConcurrentHashMap<>();
          dead.forEach(r -> byBody.put(RabbitBroker.body(r), r));
          assertThat(byBody).containsOnlyKeys("poison-1", "broken-2");
          GetResponse poison = byBody.get("poison-1");
          assertThat(RabbitBroker.header(poison, DeadLetterHeaders.REASON))
              .isEqualTo("TERMINAL_FAILURE");
          assertThat(RabbitBroker.header(poison, DeadLetterHeaders.ORIGINAL_QUEUE)).isEqualTo(queue);
          assertThat(RabbitBroker.header(poison, DeadLetterHeaders.IDEMPOTENCY_KEY)).isEqualTo("m1");
          assertThat(RabbitBroker.header(poison, DeadLetterHeaders.EXCEPTION_MESSAGE))
              .isEqualTo("cannot parse poison-1");
          assertThat(poison.getEnvelope().getRoutingKey()).isEqualTo(queue);
          GetResponse broken = byBody.get("broken-2");
          assertThat(RabbitBroker.header(broken, DeadLetterHeaders.REASON))
              .isEqualTo("RETRIES_EXHAUSTED");
          assertThat(RabbitBroker.header(broken, DeadLetterHeaders.ATTEMPTS)).isEqualTo("2");
          Await.until("e0 and e3 shipped", Duration.ofSeconds(60),
              () -> shipping.shipped.size() == 2,
              () -> shipping.shipped.toString());

          RabbitBroker.publish(queue, "m1", "poison-1"); // a duplicate of the dead letter
          Replays replays = context.getBean(Replays.class);
          Await.until("the duplicate replayed", Duration.ofSeconds(60),
              () -> replays.replayed.get() == 1,
              () -> replays.replayed.toString());
        });
    assertThat(RabbitBroker.ready(queue)).as("everything acknowledged").isZero();
    assertThat(RabbitBroker.ready(topology.deadLetterQueue())).as("no second dead letter").isZero();
    assertThat(shipped.get().runs("poison-1")).isOne();
    assertThat(shipped.get().runs("broken-2")).isEqualTo(2);
    assertThat(shipped.get().shipped).containsOnlyKeys("e0", "e3")
        .allSatisfy((order, n) -> assertThat(n).hasValue(1));
  }

  @Test
  void propertiesFillTheListenerBuilder() {
    runner.withPropertyValues("once.rabbitmq.scope=orders-scope",
            "once.rabbitmq.key-header=event-id", "once.rabbitmq.dead-letter.exchange=orders.dlx")
        .run(context -> {
          assertThat(context).hasNotFailed();
          OnceRabbitListeners listeners = context.getBean(OnceRabbitListeners.class);
          assertThat(listeners.once()).isSameAs(context.getBean(Once.class));
          try (OnceRabbitListener fromBuilder = listeners.builder((m, a) -> { }).build()) {
            assertThat(fromBuilder.scope()).isEqualTo("orders-scope");
            assertThat(fromBuilder.once()).isSameAs(context.getBean(Once.class));
          }
          assertThat(listeners.listener("orders", (m, a) -> { }).scope()).isEqualTo("orders");
        });
  }

  @Test
  void aListenerNeedsADeadLetterExchange() {
    runner.run(context -> {
      OnceRabbitListeners listeners = context.getBean(OnceRabbitListeners.class);
      assertThatThrownBy(() -> listeners.listener("orders", (m, a) -> { }))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("once.rabbitmq.dead-letter.exchange");
      try (OnceRabbitListener own = listeners.builder((m, a) -> { }).scope("orders")
          .deadLetterExchange("orders.dlx").build()) {
        assertThat(own.scope()).isEqualTo("orders");
      }
    });
  }

  @Test
  void badPropertiesFailTheStartupWithTheBuildersMessage() {
    runner.withPropertyValues("once.rabbitmq.retry-backoff.initial=10s",
            "once.rabbitmq.retry-backoff.max=1s")
        .run(context -> assertThat(context.getStartupFailure()).rootCause()
            .hasMessageContaining("below initial"));
    runner.withPropertyValues("once.rabbitmq.max-attempts=0")
        .run(context -> assertThat(context.getStartupFailure()).rootCause()
            .hasMessageContaining("maxAttempts"));
    runner.withPropertyValues("once.rabbitmq.dead-letter.confirm-timeout=0s")
        .run(context -> assertThat(context.getStartupFailure()).rootCause()
            .hasMessageContaining("confirmTimeout"));
  }

  @Test
  void withoutSpringRabbitOrOnceRabbitmqTheBeanIsAbsent() {
    runner.withClassLoader(new FilteredClassLoader(SimpleMessageListenerContainer.class))
        .run(context -> assertThat(context).hasNotFailed().hasSingleBean(Once.class)
            .doesNotHaveBean(OnceRabbitListeners.class));
    runner.withClassLoader(new FilteredClassLoader(OnceRabbitListener.class))
        .run(context -> assertThat(context).hasNotFailed().hasSingleBean(Once.class)
            .doesNotHaveBean(OnceRabbitListeners.class));
  }

  @Test
  void switchedOffOrWithoutAOnceTheBeanIsAbsent() {
    runner.withPropertyValues("once.rabbitmq.enabled=false").run(context -> assertThat(context)
        .hasNotFailed().doesNotHaveBean(OnceRabbitListeners.class));
    runner.withPropertyValues("once.enabled=false").run(context -> assertThat(context)
        .hasNotFailed().doesNotHaveBean(Once.class).doesNotHaveBean(OnceRabbitListeners.class));
  }

  @Test
  void theApplicationsBeanWins() {
    Once own = Once.builder(new InMemoryStore()).build();
    runner.withBean("myListeners", OnceRabbitListeners.class,
            () -> new OnceRabbitListeners(own, new OnceRabbitProperties()))
        .run(context -> {
          assertThat(context).hasNotFailed().hasSingleBean(OnceRabbitListeners.class);
          assertThat(context.getBean(OnceRabbitListeners.class).once()).isSameAs(own);
        });
  }
}
