package dev.once.cli.support;

import java.util.Arrays;

/**
 * Latency samples in nanoseconds, recorded by many threads (each into a buffer of its own, so
 * recording takes no lock) and summarised after they stopped.
 */
public final class Latencies {

  private final ThreadLocal<Buffer> buffers;
  private final java.util.Queue<Buffer> all = new java.util.concurrent.ConcurrentLinkedQueue<>();

  /** No samples yet. */
  public Latencies() {
    buffers = ThreadLocal.withInitial(() -> {
      Buffer buffer = new Buffer();
      all.add(buffer);
      return buffer;
    });
  }

  /** Records one sample of {@code nanos} (a negative one as zero); from any thread. */
  public void record(long nanos) {
    buffers.get().add(Math.max(0, nanos));
  }

  /** Every sample, sorted; call after the recording threads stopped. */
  public Summary summary() {
    int n = all.stream().mapToInt(b -> b.size).sum();
    long[] samples = new long[n];
    int at = 0;
    for (Buffer buffer : all) {
      System.arraycopy(buffer.values, 0, samples, at, buffer.size);
      at += buffer.size;
    }
    Arrays.sort(samples);
    return new Summary(samples);
  }

  private static final class Buffer {
    long[] values = new long[1024];
    int size;

    void add(long value) {
      if (size == values.length) {
        values = Arrays.copyOf(values, size * 2);
      }
      values[size++] = value;
    }
  }

  /** Sorted samples in nanoseconds. */
  public static final class Summary {
    private final long[] sorted;

    Summary(long[] sorted) {
      this.sorted = sorted;
    }

    /** How many samples there are. */
    public int count() {
      return sorted.length;
    }

    /** The {@code p}-th percentile (nearest rank), in nanoseconds; 0 without samples. */
    public long percentile(double p) {
      if (sorted.length == 0) {
        return 0;
      }
      int rank = (int) Math.ceil(p / 100.0 * sorted.length);
      return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
    }

    /**
     * Counts per bucket of a log-scale histogram: bucket {@code i} holds samples in
     * [{@code bounds[i]}, {@code bounds[i+1]}) nanoseconds.
     */
    public long[] histogram(long[] bounds) {
      long[] counts = new long[bounds.length - 1];
      for (long sample : sorted) {
        int i = Arrays.binarySearch(bounds, sample);
        int bucket = i >= 0 ? i : -i - 2;
        counts[Math.max(0, Math.min(counts.length - 1, bucket))]++;
      }
      return counts;
    }
  }
}
