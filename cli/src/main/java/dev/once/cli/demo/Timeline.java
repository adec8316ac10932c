package dev.once.cli.demo;

import java.util.concurrent.atomic.AtomicLongArray;

/** Events counted per fixed interval since a start, from many threads. */
final class Timeline {

  /**
   * Fine enough that a run over in a fraction of a second still has a shape; the report merges
   * buckets to fit longer runs.
   */
  static final long BUCKET_MILLIS = 10;

  private final long startNanos;
  private final AtomicLongArray counts;
  private volatile long lastNanos;

  /** @param span the longest run it counts; later events land in the last bucket */
  Timeline(long startNanos, java.time.Duration span) {
    this.startNanos = startNanos;
    this.lastNanos = startNanos;
    this.counts = new AtomicLongArray((int) (span.toMillis() / BUCKET_MILLIS) + 1);
  }

  void count(long nowNanos) {
    int bucket = (int) Math.min(counts.length() - 1,
        Math.max(0, (nowNanos - startNanos) / 1_000_000 / BUCKET_MILLIS));
    counts.incrementAndGet(bucket);
    lastNanos = nowNanos;
  }

  /** Counts per bucket up to the last event; events per second is count × 1000 / BUCKET_MILLIS. */
  long[] buckets() {
    int used = (int) Math.min(counts.length(),
        (lastNanos - startNanos) / 1_000_000 / BUCKET_MILLIS + 1);
    long[] out = new long[used];
    for (int i = 0; i < used; i++) {
      out[i] = counts.get(i);
    }
    return out;
  }
}
