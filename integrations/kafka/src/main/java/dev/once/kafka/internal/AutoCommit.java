package dev.once.kafka.internal;

import java.lang.reflect.Field;
import java.util.Optional;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.KafkaConsumer;

/**
 * Whether a consumer commits its position by itself ({@code enable.auto.commit}, Kafka's default
 * {@code true}). The setting is not exposed by {@link Consumer}; a {@link KafkaConsumer} keeps it
 * in its delegate (the classic protocol's coordinator, or the new protocol's consumer), which is
 * read reflectively. Anything else, or a kafka-clients whose internals moved, answers empty: the
 * loop then relies on its seek-back alone (see {@code IdempotentConsumerLoop}). Not API.
 */
public final class AutoCommit {

  private AutoCommit() {}

  /** True or false when it could be read from {@code consumer}; empty when it could not. */
  public static Optional<Boolean> enabled(Consumer<?, ?> consumer) {
    if (!(consumer instanceof KafkaConsumer<?, ?>)) {
      return Optional.empty();
    }
    try {
      Object delegate = field(consumer, "delegate");
      Object holder = has(delegate, "autoCommitEnabled") ? delegate : field(delegate, "coordinator");
      return holder == null ? Optional.empty()
          : Optional.of((Boolean) field(holder, "autoCommitEnabled"));
    } catch (ReflectiveOperationException | RuntimeException e) {
      return Optional.empty();
    }
  }

  private static boolean has(Object target, String name) {
    for (Class<?> c = target.getClass(); c != null; c = c.getSuperclass()) {
      for (Field f : c.getDeclaredFields()) {
        if (f.getName().equals(name)) {
          return true;
        }
      }
    }
    return false;
  }

  private static Object field(Object target, String name) throws ReflectiveOperationException {
    for (Class<?> c = target.getClass(); c != null; c = c.getSuperclass()) {
      try {
        Field f = c.getDeclaredField(name);
        f.setAccessible(true);
        return f.get(target);
      } catch (NoSuchFieldException e) {
        // look in the superclass
      }
    }
    throw new NoSuchFieldException(name);
  }
}
