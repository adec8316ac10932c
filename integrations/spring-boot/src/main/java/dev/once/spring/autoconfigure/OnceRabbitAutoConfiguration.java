package dev.once.spring.autoconfigure;

import dev.once.Once;
import dev.once.spring.rabbitmq.OnceRabbitListeners;
import dev.once.spring.rabbitmq.OnceRabbitProperties;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;

/**
 * Idempotent Spring AMQP listeners, when once-rabbitmq and spring-rabbit are on the classpath and
 * the context has one {@link Once}: an {@link OnceRabbitListeners} from the
 * {@code once.rabbitmq.*} {@link OnceRabbitProperties}. It backs off when the application declares
 * its own; {@code once.rabbitmq.enabled=false} switches it off.
 */
@AutoConfiguration(after = OnceAutoConfiguration.class,
    afterName = "org.springframework.boot.amqp.autoconfigure.RabbitAutoConfiguration")
@ConditionalOnClass(name = {"dev.once.rabbitmq.spring.OnceRabbitListener",
    "org.springframework.amqp.rabbit.listener.SimpleMessageListenerContainer"})
@ConditionalOnBooleanProperty(name = {"once.enabled", "once.rabbitmq.enabled"},
    matchIfMissing = true)
@ConditionalOnSingleCandidate(Once.class)
@EnableConfigurationProperties(OnceRabbitProperties.class)
public class OnceRabbitAutoConfiguration {

  /** Makes the listeners: the {@link Once} bean and the properties; closes them with the context. */
  @Bean
  @ConditionalOnMissingBean
  public OnceRabbitListeners onceRabbitListeners(Once once, OnceRabbitProperties properties) {
    return new OnceRabbitListeners(once, properties);
  }
}
