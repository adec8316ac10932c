package dev.once.examples.webfluxorders;

import dev.once.testkit.OnceRecorder;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;

/** The beans the tests add to the application ({@link OrdersTestBase} imports them). */
@TestConfiguration(proxyBeanMethods = false)
class OrdersTestBeans {

  /** What Once did, key by key: the starter adds every OnceListener bean to its Once. */
  @Bean
  OnceRecorder onceRecorder() {
    return new OnceRecorder();
  }
}
