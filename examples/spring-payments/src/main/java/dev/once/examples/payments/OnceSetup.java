package dev.once.examples.payments;

import dev.once.FailurePolicy;
import dev.once.spring.OnceBuilderCustomizer;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import tools.jackson.core.JacksonException;

/** What the {@code once.*} properties do not cover: which failures are final, and the saga. */
@Configuration(proxyBeanMethods = false)
public class OnceSetup {

  /** The failures no retry fixes: stored and replayed, dead-lettered by the listener. */
  public static final FailurePolicy FAILURES = FailurePolicy.retryAll().terminalOn(
      InsufficientFundsException.class, OutOfStockException.class,
      UndeliverableException.class, JacksonException.class);

  @Bean
  OnceBuilderCustomizer failuresAndSteps(Checkout checkout) {
    return builder -> builder
        .failurePolicy(FAILURES)
        .steps(checkout.compensableSteps()); // any retry can undo what an earlier attempt did
  }
}
