package dev.once.testkit;

import dev.once.Sleeper;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A clock that moves only when told to: tests expire leases and retention by {@link #advance},
 * never by sleeping. Thread-safe; every clone shares the time.
 */
public final class ManualClock extends Clock {

  /** Where new clocks start: a fixed, unremarkable instant. */
  public static final Instant DEFAULT_START = Instant.parse("2030-01-01T00:00:00Z");

  private final AtomicReference<Instant> now;
  private final ZoneId zone;

  private ManualClock(AtomicReference<Instant> now, ZoneId zone) {
    this.now = now;
    this.zone = zone;
  }

  /** A clock at {@link #DEFAULT_START}. */
  public ManualClock() {
    this(DEFAULT_START);
  }

  /** A clock at {@code start}, in UTC. */
  public ManualClock(Instant start) {
    this(new AtomicReference<>(Objects.requireNonNull(start, "start")), ZoneOffset.UTC);
  }

  @Override
  public Instant instant() {
    return now.get();
  }

  @Override
  public ZoneId getZone() {
    return zone;
  }

  @Override
  public Clock withZone(ZoneId zone) {
    return new ManualClock(now, zone);
  }

  /** Moves time by {@code duration}, which may be negative (a clock jumping back). */
  public Instant advance(Duration duration) {
    Objects.requireNonNull(duration, "duration");
    return now.updateAndGet(t -> t.plus(duration));
  }

  /** Sets the time. */
  public void set(Instant instant) {
    now.set(Objects.requireNonNull(instant, "instant"));
  }

  /** A {@link Sleeper} that advances this clock instead of sleeping. */
  public Sleeper sleeper() {
    return this::advance;
  }
}
