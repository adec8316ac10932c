package dev.once.support;

import java.time.Duration;
import java.util.Objects;

/**
 * Argument checks for the builders of stores and integrations, so that every module refuses a bad
 * setting with the same words and at the moment it is set: {@code IllegalArgumentException} naming
 * the setting and the value given, {@code NullPointerException} naming it when null.
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

  /**
   * Checks a retry backoff that starts at {@code initial} and grows up to {@code max}: both
   * positive, {@code max} not below {@code initial}.
   */
  public static void backoff(Duration initial, Duration max) {
    positive(initial, "initial");
    positive(max, "max");
    if (max.compareTo(initial) < 0) {
      throw new IllegalArgumentException("max backoff " + max + " is below initial " + initial);
    }
  }
}
