package dev.once;

import java.time.Duration;

/**
 * Pauses a waiting duplicate between polls ({@link InProgressPolicy#waitUpTo}). Injectable so that
 * tests advance a manual clock instead of sleeping.
 */
@FunctionalInterface
public interface Sleeper {

  /** {@link Thread#sleep}. */
  Sleeper SYSTEM = duration -> Thread.sleep(duration.toMillis(), duration.toNanosPart() % 1_000_000);

  void sleep(Duration duration) throws InterruptedException;
}
