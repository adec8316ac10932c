package dev.once.spring.internal;

import java.util.function.IntConsumer;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/** How the Spring transaction active on this thread ends. Only loaded when spring-tx is present. */
final class TransactionCompletion {

  private TransactionCompletion() {}

  /**
   * Tells {@code status} ({@link TransactionSynchronization#STATUS_COMMITTED} and the others) to
   * {@code onCompletion} when the transaction synchronised on this thread ends; nothing if none is.
   */
  static void watch(IntConsumer onCompletion) {
    if (!TransactionSynchronizationManager.isSynchronizationActive()) {
      return;
    }
    TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
      @Override
      public void afterCompletion(int status) {
        onCompletion.accept(status);
      }
    });
  }
}
