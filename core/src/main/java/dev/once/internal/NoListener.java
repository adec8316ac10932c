package dev.once.internal;

import dev.once.OnceListener;

/** The listener of a {@link dev.once.Once} built without one: lets the hot path skip timing. */
final class NoListener implements OnceListener {

  /** The one instance; compared by identity. */
  static final OnceListener INSTANCE = new NoListener();

  private NoListener() {}
}
