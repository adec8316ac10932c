package dev.once.examples.payments;

import dev.once.spring.rabbitmq.OnceRabbitListeners;
import org.springframework.amqp.core.AcknowledgeMode;
import org.springframework.amqp.core.Binding;
import org.springframework.amqp.core.BindingBuilder;
import org.springframework.amqp.core.DirectExchange;
import org.springframework.amqp.core.Queue;
import org.springframework.amqp.core.QueueBuilder;
import org.springframework.amqp.rabbit.config.SimpleRabbitListenerContainerFactory;
import org.springframework.amqp.rabbit.listener.SimpleMessageListenerContainer;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import tools.jackson.databind.json.JsonMapper;

/**
 * The payment requests listener: other services publish {@link ChargeRequest}s to the queue
 * {@code payments.queue} (default {@code payments}), each with a {@code message-id}; every one is
 * charged once however often it is delivered. The topology is docs/first-project.md's, section 4:
 * the queue, its dead-letter exchange ({@code once.rabbitmq.dead-letter.exchange}, application.yml)
 * and a dead-letter queue bound to it by the queue's name.
 */
@Configuration
public class PaymentRequests {

  private final String queue;

  public PaymentRequests(@Value("${payments.queue}") String queue) {
    this.queue = queue;
  }

  @Bean
  Queue payments() {
    return QueueBuilder.durable(queue).build();
  }

  @Bean
  DirectExchange paymentsDlx() {
    return new DirectExchange(queue + ".dlx");
  }

  @Bean
  Queue paymentsDlq() {
    return QueueBuilder.durable(queue + ".dlq").build();
  }

  @Bean
  Binding paymentsDlqBinding() {   // dead letters are routed by the queue's name
    return BindingBuilder.bind(paymentsDlq()).to(paymentsDlx()).with(queue);
  }

  @Bean
  SimpleMessageListenerContainer paymentsContainer(SimpleRabbitListenerContainerFactory factory,
      OnceRabbitListeners once, Payments payments, JsonMapper json) {
    SimpleMessageListenerContainer container = factory.createListenerContainer();
    container.setQueueNames(queue);
    container.setAcknowledgeMode(AcknowledgeMode.MANUAL); // the listener acks what is final
    container.setReceiveTimeout(10); // with consumer batches: the wait for each further message
    container.setMessageListener(once.listener(queue,     // the keys' scope
        new PaymentRequestHandler(payments, json)));
    return container;
  }
}
