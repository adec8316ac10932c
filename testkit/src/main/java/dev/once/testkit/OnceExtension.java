package dev.once.testkit;

import dev.once.InMemoryStore;
import dev.once.Once;
import dev.once.spi.IdempotencyStore;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * A JUnit 5 extension for testing an application's own code against Once, without a database:
 * each test method gets a fresh {@link InMemoryStore}, a {@link ManualClock} (leases and
 * retention pass when the test says, never by sleeping), an {@link OnceRecorder}, and a
 * {@link Once} built on the three — as parameters of the test method (or of its
 * {@code @BeforeEach}). Pair it with {@link OnceAssertions}.
 *
 * <pre>{@code
 * @ExtendWith(OnceExtension.class)
 * class ChargesTest {
 *   @Test
 *   void aRetriedChargeChargesOnce(Once once, OnceRecorder recorder) { ... }
 * }
 * }</pre>
 *
 * To test on a real store, build the {@code Once} yourself on it with the recorder as its
 * listener: the assertions read any store.
 */
public final class OnceExtension implements ParameterResolver {

  private static final ExtensionContext.Namespace NAMESPACE =
      ExtensionContext.Namespace.create(OnceExtension.class);

  /** What one test method gets, made on its first parameter that asks for any of it. */
  private record Kit(InMemoryStore store, ManualClock clock, OnceRecorder recorder, Once once) {
    static Kit create() {
      InMemoryStore store = new InMemoryStore();
      ManualClock clock = new ManualClock();
      OnceRecorder recorder = new OnceRecorder();
      Once once = Once.builder(store).clock(clock).sleeper(clock.sleeper()).listener(recorder)
          .build();
      return new Kit(store, clock, recorder, once);
    }
  }

  @Override
  public boolean supportsParameter(ParameterContext parameter, ExtensionContext context) {
    Class<?> type = parameter.getParameter().getType();
    return type == Once.class || type == ManualClock.class || type == OnceRecorder.class
        || type == InMemoryStore.class || type == IdempotencyStore.class;
  }

  @Override
  public Object resolveParameter(ParameterContext parameter, ExtensionContext context) {
    Kit kit = context.getStore(NAMESPACE).getOrComputeIfAbsent(key(context),
        k -> Kit.create(), Kit.class);
    Class<?> type = parameter.getParameter().getType();
    if (type == Once.class) {
      return kit.once();
    }
    if (type == ManualClock.class) {
      return kit.clock();
    }
    if (type == OnceRecorder.class) {
      return kit.recorder();
    }
    return kit.store();
  }

  /** One kit per test method (shared by its @BeforeEach, which runs in its context). */
  private static String key(ExtensionContext context) {
    return context.getUniqueId();
  }
}
