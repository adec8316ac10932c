package dev.once.spring.internal;

import dev.once.OnceListener;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.Objects;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

/**
 * An {@link OnceListener} bean as the {@code Once} bean sees it: an {@link Error} it throws (an
 * {@code AssertionError}, a {@code NoClassDefFoundError} of a missing optional dependency) is
 * logged and dropped, like the exceptions Once already ignores. Once tells some events between
 * the work's return and the stored outcome ({@code onOutcomeNotStored}, {@code onFailed}): an
 * error escaping there would leave the claim in progress until its lease passed, and the work would
 * run again. The JVM's own errors ({@link VirtualMachineError}) pass unchanged. A proxy over the
 * interface, so that events added to {@link OnceListener} later are forwarded too.
 */
public final class GuardedListener implements InvocationHandler {

  private static final Log LOG = LogFactory.getLog(GuardedListener.class);

  private final OnceListener listener;

  private GuardedListener(OnceListener listener) {
    this.listener = listener;
  }

  /** {@code listener}, guarded. */
  public static OnceListener of(OnceListener listener) {
    Objects.requireNonNull(listener, "listener");
    if (Proxy.isProxyClass(listener.getClass())
        && Proxy.getInvocationHandler(listener) instanceof GuardedListener) {
      return listener;
    }
    return (OnceListener) Proxy.newProxyInstance(GuardedListener.class.getClassLoader(),
        new Class<?>[] {OnceListener.class}, new GuardedListener(listener));
  }

  @Override
  public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
    if (method.getDeclaringClass() == Object.class) {
      return switch (method.getName()) {
        case "equals" -> proxy == args[0];
        case "hashCode" -> System.identityHashCode(proxy);
        default -> "Guarded[" + listener + "]";
      };
    }
    try {
      return method.invoke(listener, args);
    } catch (InvocationTargetException e) {
      Throwable thrown = e.getCause();
      if (thrown instanceof RuntimeException || thrown instanceof VirtualMachineError) {
        throw thrown; // Once logs and ignores the former; the JVM is failing on the latter
      }
      LOG.warn("OnceListener " + listener + " threw " + thrown + " on " + method.getName()
          + "; ignored", thrown);
      return null;
    }
  }
}
