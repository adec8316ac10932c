package dev.once.spring.internal;

import java.lang.reflect.Method;
import java.sql.Connection;
import javax.sql.DataSource;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.annotation.AnnotationTransactionAttributeSource;
import org.springframework.transaction.interceptor.TransactionAttribute;
import org.springframework.transaction.interceptor.TransactionAttributeSource;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * The Spring transaction a call may join: whether a method will run in one on the store's
 * DataSource, and the connection bound to it. Only loaded when spring-jdbc is present.
 */
final class SpringTransactions {

  private final DataSource dataSource;
  private final TransactionAttributeSource attributes;

  SpringTransactions(DataSource dataSource, ListableBeanFactory beans) {
    this.dataSource = dataSource;
    this.attributes = beans.getBeanProvider(TransactionAttributeSource.class)
        .getIfUnique(AnnotationTransactionAttributeSource::new);
  }

  /**
   * Whether {@code method} will run in a transaction on the DataSource: it is annotated to begin
   * or require one, or one is already active and it does not suspend it.
   */
  boolean willRunInTransaction(Method method, Class<?> targetClass) {
    boolean active = TransactionSynchronizationManager.isActualTransactionActive()
        && TransactionSynchronizationManager.hasResource(dataSource);
    TransactionAttribute attribute = attributes.getTransactionAttribute(method, targetClass);
    if (attribute == null) {
      return active;
    }
    switch (attribute.getPropagationBehavior()) {
      case TransactionDefinition.PROPAGATION_REQUIRED:
      case TransactionDefinition.PROPAGATION_REQUIRES_NEW:
      case TransactionDefinition.PROPAGATION_NESTED:
      case TransactionDefinition.PROPAGATION_MANDATORY:
        return true;
      case TransactionDefinition.PROPAGATION_SUPPORTS:
        return active;
      default:
        return false;
    }
  }

  /**
   * Runs {@code work} with the connection of the transaction active on the DataSource, or with
   * null if there is none (a transaction on another resource, or none at all).
   */
  Object inTransaction(IdempotentSupport.ConnectionWork work) throws Exception {
    if (!TransactionSynchronizationManager.isActualTransactionActive()
        || !TransactionSynchronizationManager.hasResource(dataSource)) {
      return work.run(null);
    }
    Connection connection = DataSourceUtils.getConnection(dataSource);
    try {
      return work.run(DataSourceUtils.isConnectionTransactional(connection, dataSource)
          ? connection : null);
    } finally {
      DataSourceUtils.releaseConnection(connection, dataSource);
    }
  }
}
