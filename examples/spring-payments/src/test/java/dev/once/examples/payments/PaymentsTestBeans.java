package dev.once.examples.payments;

import dev.once.testkit.OnceRecorder;
import org.springframework.amqp.core.AmqpAdmin;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;

/** The beans the tests add to the application ({@link PaymentsTestBase} imports them). */
@TestConfiguration(proxyBeanMethods = false)
class PaymentsTestBeans {

  /** What Once did, key by key: the starter adds every OnceListener bean to its Once. */
  @Bean
  OnceRecorder onceRecorder() {
    return new OnceRecorder();
  }

  /** Deletes this run's queues and exchange when the context closes. */
  @Bean
  DisposableBean deleteTestTopology(AmqpAdmin admin) {
    return () -> {
      admin.deleteQueue(PaymentsTestBase.QUEUE);
      admin.deleteQueue(PaymentsTestBase.QUEUE + ".dlq");
      admin.deleteExchange(PaymentsTestBase.QUEUE + ".dlx");
    };
  }
}
