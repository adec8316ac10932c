package dev.once.spring.autoconfigure;

import dev.once.Once;
import dev.once.batch.DeadLetterPublisher;
import dev.once.kafka.spring.KafkaTemplateDeadLetterPublisher;
import dev.once.spring.kafka.OnceKafkaListeners;
import dev.once.spring.kafka.OnceKafkaProperties;
import java.util.List;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionOutcome;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.boot.autoconfigure.condition.SpringBootCondition;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.ConfigurationCondition;
import org.springframework.core.type.AnnotatedTypeMetadata;
import org.springframework.kafka.core.KafkaOperations;

/**
 * Idempotent Spring Kafka listeners, when once-kafka and spring-kafka are on the classpath and the
 * context has one {@link Once}: an {@link OnceKafkaListeners} from the {@code once.kafka.*}
 * {@link OnceKafkaProperties}, and a {@link KafkaTemplateDeadLetterPublisher} over the context's
 * {@code KafkaTemplate} (Spring Boot's) for its dead letters. Each backs off when the application
 * declares its own ({@link OnceKafkaListeners}, or a {@link DeadLetterPublisher} of
 * {@code ConsumerRecord}s: another broker's publisher bean is not Kafka's);
 * {@code once.kafka.enabled=false} switches both off.
 */
@AutoConfiguration(after = OnceAutoConfiguration.class,
    afterName = "org.springframework.boot.kafka.autoconfigure.KafkaAutoConfiguration")
@ConditionalOnClass(name = {"dev.once.kafka.IdempotentConsumer",
    "dev.once.kafka.spring.OnceBatchListener", "org.springframework.kafka.core.KafkaTemplate"})
@ConditionalOnBooleanProperty(name = {"once.enabled", "once.kafka.enabled"}, matchIfMissing = true)
@ConditionalOnSingleCandidate(Once.class)
@EnableConfigurationProperties(OnceKafkaProperties.class)
public class OnceKafkaAutoConfiguration {

  /**
   * Dead letters through the context's one {@link KafkaOperations} (Spring Boot's
   * {@code KafkaTemplate}): to {@code <topic>} + {@code once.kafka.dead-letter.topic-suffix},
   * waiting up to {@code once.kafka.dead-letter.send-timeout} for the broker's acknowledgement.
   */
  @Bean
  @Conditional(NoKafkaDeadLetterPublisher.class)
  @ConditionalOnSingleCandidate(KafkaOperations.class)
  public KafkaTemplateDeadLetterPublisher<Object, Object> onceKafkaDeadLetters(
      KafkaOperations<?, ?> operations, OnceKafkaProperties properties) {
    String suffix = properties.getDeadLetter().getTopicSuffix();
    if (suffix == null || suffix.isEmpty()) {
      // The same topic would feed its own dead letters back to the listener.
      throw new IllegalArgumentException("once.kafka.dead-letter.topic-suffix must not be empty");
    }
    @SuppressWarnings("unchecked")
    KafkaOperations<Object, Object> template = (KafkaOperations<Object, Object>) operations;
    return KafkaTemplateDeadLetterPublisher.to(template, record -> record.topic() + suffix)
        .withTimeout(properties.getDeadLetter().getSendTimeout());
  }

  /** Makes the listeners: the {@link Once} bean, the properties, the dead-letter publisher. */
  @Bean
  @ConditionalOnMissingBean
  public OnceKafkaListeners onceKafkaListeners(Once once, OnceKafkaProperties properties,
      ConfigurableListableBeanFactory beans) {
    return new OnceKafkaListeners(once, properties, KafkaDeadLetterBeans.unique(beans));
  }

  /** No {@link DeadLetterPublisher} bean that takes Kafka records (see KafkaDeadLetterBeans). */
  static final class NoKafkaDeadLetterPublisher extends SpringBootCondition
      implements ConfigurationCondition {

    @Override
    public ConfigurationPhase getConfigurationPhase() {
      return ConfigurationPhase.REGISTER_BEAN;
    }

    @Override
    public ConditionOutcome getMatchOutcome(ConditionContext context,
        AnnotatedTypeMetadata metadata) {
      List<String> names = KafkaDeadLetterBeans.names(context.getBeanFactory());
      return names.isEmpty()
          ? ConditionOutcome.match("no DeadLetterPublisher of Kafka records")
          : ConditionOutcome.noMatch("the application's DeadLetterPublisher of Kafka records "
              + names);
    }
  }
}
