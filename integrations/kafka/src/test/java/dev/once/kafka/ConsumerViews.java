package dev.once.kafka;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.Properties;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;

/** Real consumers seen through views: a fault injected before a call, or a setting hidden. */
final class ConsumerViews {

  private ConsumerViews() {}

  /** Runs before each call of the consumer; throws to fail it. */
  interface Fault {
    void before(String method, Object[] args);
  }

  /** {@code real}, with {@code fault} run before each of its calls. */
  @SuppressWarnings("unchecked")
  static <K, V> Consumer<K, V> view(Consumer<K, V> real, Fault fault) {
    return (Consumer<K, V>) Proxy.newProxyInstance(Consumer.class.getClassLoader(),
        new Class<?>[] {Consumer.class}, (proxy, method, args) -> {
          fault.before(method.getName(), args);
          try {
            return method.invoke(real, args);
          } catch (InvocationTargetException e) {
            throw e.getCause();
          }
        });
  }

  /**
   * A consumer whose auto-commit is on (every 100 ms and on close), seen through a view the loop
   * cannot read the setting from, as with a wrapped or decorated consumer: the loop's own
   * seek-back is then what keeps a commit from passing a record that did not run.
   */
  static Consumer<String, String> autoCommitting(Properties properties) {
    Properties p = new Properties();
    p.putAll(properties);
    p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "true");
    p.put(ConsumerConfig.AUTO_COMMIT_INTERVAL_MS_CONFIG, "100");
    return view(new KafkaConsumer<>(p), (method, args) -> {});
  }
}
