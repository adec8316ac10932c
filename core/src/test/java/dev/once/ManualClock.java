package dev.once;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Core's own tests' clock: moves only when told. (Core cannot use once-testkit's, which depends
 * on core; users and the other modules' tests use that one.)
 */
public final class ManualClock extends Clock {

  private final AtomicReference<Instant> now =
      new AtomicReference<>(Instant.parse("2030-01-01T00:00:00Z"));

  @Override
  public Instant instant() {
    return now.get();
  }

  @Override
  public ZoneId getZone() {
    return ZoneOffset.UTC;
  }

  @Override
  public Clock withZone(ZoneId zone) {
    return this;
  }

  /** Moves time by {@code duration}. */
  public Instant advance(Duration duration) {
    return now.updateAndGet(t -> t.plus(duration));
  }

  /** Sets the time. */
  public void set(Instant instant) {
    now.set(instant);
  }

  /** A sleeper that advances this clock instead of sleeping. */
  public Sleeper sleeper() {
    return this::advance;
  }
}
