package dev.once.internal;

import java.time.Duration;
import java.util.Objects;

/**
 * Argument checks shared by the builders of every module, so each setting is refused with the same
 * words. Public for other modules; not API.
 */
public final class Checks {

  private Checks() {}

  /** {@code value}, if it is not null and greater than zero. */
  public static Duration positive(Duration value, String name) {
    Objects.requireNonNull(value, name);
    if (value.isNegative() || value.isZero()) {
      throw new IllegalArgumentException(name + " must be positive, was " + value);
    }
    return value;
  }

  /** {@code value}, if it is greater than zero. */
  public static int positive(int value, String name) {
    if (value <= 0) {
      throw new IllegalArgumentException(name + " must be positive, was " + value);
    }
    return value;
  }
}
