package dev.once;

import dev.once.support.Checks;
import dev.once.spi.IdempotencyStore;
import java.time.Clock;
import java.time.Duration;
import java.util.Objects;

/**
 * Housekeeping for a store: {@link #purgeExpired()} deletes records past their retention;
 * {@link #reapExpiredLeases()} turns IN_PROGRESS records whose lease passed into FAILED so they
 * show in monitoring and their zombies are fenced. Both work in bounded batches, so no call holds
 * long locks. Run once, or {@link #schedule} on a {@link Scheduler}. Immutable.
 */
public final class Maintenance {

  /** Default number of records touched per store call. */
  public static final int DEFAULT_BATCH_SIZE = 1000;

  private final IdempotencyStore store;
  private final Clock clock;
  private final int batchSize;

  private Maintenance(IdempotencyStore store, Clock clock, int batchSize) {
    this.store = store;
    this.clock = clock;
    this.batchSize = batchSize;
  }

  /** Maintenance of {@code store} on the system clock, in batches of {@value #DEFAULT_BATCH_SIZE}. */
  public static Maintenance of(IdempotencyStore store) {
    return new Maintenance(Objects.requireNonNull(store, "store"), Clock.systemUTC(),
        DEFAULT_BATCH_SIZE);
  }

  /** The same maintenance on another clock. */
  public Maintenance withClock(Clock clock) {
    return new Maintenance(store, Objects.requireNonNull(clock, "clock"), batchSize);
  }

  /** The same maintenance in batches of {@code batchSize} records. */
  public Maintenance withBatchSize(int batchSize) {
    return new Maintenance(store, clock, Checks.positive(batchSize, "batchSize"));
  }

  /** What one pass did. */
  public record Report(long purged, long reaped) {}

  /** Deletes every record expired now, batch by batch; returns how many. */
  public long purgeExpired() {
    long total = 0;
    int n;
    do {
      n = store.purgeExpired(clock.instant(), batchSize);
      total += n;
    } while (n >= batchSize);
    return total;
  }

  /** Reaps every IN_PROGRESS record whose lease passed; returns how many. */
  public long reapExpiredLeases() {
    long total = 0;
    int n;
    do {
      n = store.reapExpiredLeases(clock.instant(), batchSize);
      total += n;
    } while (n >= batchSize);
    return total;
  }

  /** One pass: reap, then purge. */
  public Report runOnce() {
    long reaped = reapExpiredLeases();
    long purged = purgeExpired();
    return new Report(purged, reaped);
  }

  /**
   * Runs {@link #runOnce()} every {@code period}. A failing pass (store down) is logged and the next
   * one tries again.
   */
  public Scheduler.Task schedule(Scheduler scheduler, Duration period) {
    Objects.requireNonNull(scheduler, "scheduler");
    Checks.positive(period, "period");
    System.Logger log = System.getLogger(Maintenance.class.getName());
    return scheduler.scheduleAtFixedRate(() -> {
      try {
        Report report = runOnce();
        log.log(System.Logger.Level.DEBUG, "maintenance: {0}", report);
      } catch (RuntimeException e) {
        log.log(System.Logger.Level.WARNING, "maintenance pass failed; next pass retries", e);
      }
    }, period);
  }
}
