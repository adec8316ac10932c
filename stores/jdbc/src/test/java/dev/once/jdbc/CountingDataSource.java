package dev.once.jdbc;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.Statement;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;

/**
 * A DataSource that records what is sent to the database through JDBC: statement executions and
 * transaction calls, in order. For tests that pin the number of round trips.
 */
final class CountingDataSource {

  private static final Set<String> CONNECTION_CALLS = Set.of("commit", "rollback",
      "setAutoCommit", "setTransactionIsolation", "setSavepoint", "releaseSavepoint");

  final List<String> calls = new CopyOnWriteArrayList<>();
  final DataSource dataSource;

  CountingDataSource(DataSource delegate) {
    dataSource = proxy(DataSource.class, delegate, (target, method, args) -> {
      Object result = method.invoke(target, args);
      return method.getName().equals("getConnection") ? connection((Connection) result) : result;
    });
  }

  private Connection connection(Connection c) {
    return proxy(Connection.class, c, (target, method, args) -> {
      String name = method.getName();
      if (CONNECTION_CALLS.contains(name)) {
        calls.add(name + (args != null && args.length == 1 ? "(" + args[0] + ")" : ""));
      }
      Object result = method.invoke(target, args);
      if (result instanceof Statement s && method.getReturnType().isInterface()) {
        return statement(s, method.getReturnType());
      }
      return result;
    });
  }

  @SuppressWarnings("unchecked")
  private <S extends Statement> S statement(S s, Class<?> type) {
    return (S) proxy((Class<S>) type, s, (target, method, args) -> {
      if (method.getName().startsWith("execute")) {
        calls.add(method.getName());
      }
      return method.invoke(target, args);
    });
  }

  @FunctionalInterface
  private interface Handler {
    Object handle(Object target, java.lang.reflect.Method method, Object[] args) throws Throwable;
  }

  private static <T> T proxy(Class<T> type, T target, Handler handler) {
    InvocationHandler h = (p, method, args) -> {
      try {
        return handler.handle(target, method, args);
      } catch (InvocationTargetException e) {
        throw e.getCause();
      }
    };
    return type.cast(Proxy.newProxyInstance(CountingDataSource.class.getClassLoader(),
        new Class<?>[] {type}, h));
  }
}
