package dev.once.spring.autoconfigure;

import dev.once.batch.DeadLetterPublisher;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.core.ResolvableType;

/**
 * The context's {@link DeadLetterPublisher} beans that can take Kafka records. Core's publisher
 * type is every broker's, so a RabbitMQ or SQS application's {@code DeadLetterPublisher<Delivery>}
 * must neither replace the Kafka template publisher nor be handed Kafka records. A bean whose
 * message type cannot be read (a lambda registered as the raw interface) counts as Kafka's, as
 * any publisher bean did before the type was shared.
 */
final class KafkaDeadLetterBeans {

  private KafkaDeadLetterBeans() {}

  static List<String> names(ConfigurableListableBeanFactory beans) {
    List<String> kafka = new ArrayList<>();
    for (String name : beans.getBeanNamesForType(DeadLetterPublisher.class, true, false)) {
      Class<?> messages = messageType(beans, name);
      if (messages == null || ConsumerRecord.class.isAssignableFrom(messages)) {
        kafka.add(name);
      }
    }
    return kafka;
  }

  /** The publisher's message type, or null when its definition does not say. */
  private static Class<?> messageType(ConfigurableListableBeanFactory beans, String name) {
    ResolvableType type = beans.containsBeanDefinition(name)
        ? beans.getMergedBeanDefinition(name).getResolvableType()
        : ResolvableType.forClass(beans.getType(name, false));
    return type.as(DeadLetterPublisher.class).getGeneric(0).resolve();
  }

  /**
   * The one Kafka publisher bean (the primary one if several), or null: none, or several and no
   * primary.
   */
  static DeadLetterPublisher<?> unique(ConfigurableListableBeanFactory beans) {
    List<String> names = names(beans);
    if (names.size() > 1) {
      names = names.stream().filter(n -> beans.containsBeanDefinition(n)
          && beans.getMergedBeanDefinition(n).isPrimary()).toList();
    }
    return names.size() == 1 ? (DeadLetterPublisher<?>) beans.getBean(names.get(0)) : null;
  }
}
