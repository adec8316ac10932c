package dev.once.testkit;

import dev.once.IdempotencyKey;
import dev.once.OnceListener;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A listener that remembers what Once did, key by key, for a test's assertions
 * ({@link OnceAssertions}): how often each key's work ran, was replayed, failed, lost its lease.
 * Thread-safe. Pass it to {@code Once.Builder.listener} (the {@link OnceExtension} does).
 */
public final class OnceRecorder implements OnceListener {

  /** What happened to a key, in order. */
  public enum Event { ACQUIRED, TAKEOVER, REPLAYED, IN_PROGRESS, MISMATCH, COMPLETED, FAILED,
    FAILED_TERMINAL, LEASE_LOST }

  /** One event of one key. */
  public record Entry(IdempotencyKey key, Event event) {}

  private final List<Entry> entries = new CopyOnWriteArrayList<>();

  @Override
  public void onAcquired(IdempotencyKey key, long token, boolean takeover) {
    entries.add(new Entry(key, takeover ? Event.TAKEOVER : Event.ACQUIRED));
  }

  @Override
  public void onReplayed(IdempotencyKey key) {
    entries.add(new Entry(key, Event.REPLAYED));
  }

  @Override
  public void onInProgress(IdempotencyKey key) {
    entries.add(new Entry(key, Event.IN_PROGRESS));
  }

  @Override
  public void onMismatch(IdempotencyKey key) {
    entries.add(new Entry(key, Event.MISMATCH));
  }

  @Override
  public void onCompleted(IdempotencyKey key, long token, Duration elapsed) {
    entries.add(new Entry(key, Event.COMPLETED));
  }

  @Override
  public void onFailed(IdempotencyKey key, long token, Throwable failure, boolean terminal) {
    entries.add(new Entry(key, terminal ? Event.FAILED_TERMINAL : Event.FAILED));
  }

  @Override
  public void onLeaseLost(IdempotencyKey key, long token) {
    entries.add(new Entry(key, Event.LEASE_LOST));
  }

  /** Every event so far, in order. */
  public List<Entry> entries() {
    return List.copyOf(entries);
  }

  /** How many times {@code event} happened to {@code key}. */
  public long count(IdempotencyKey key, Event event) {
    return entries.stream().filter(e -> e.key().equals(key) && e.event() == event).count();
  }

  /** How many times the work of {@code key} started (first runs, retries and takeovers). */
  public long runs(IdempotencyKey key) {
    return count(key, Event.ACQUIRED) + count(key, Event.TAKEOVER);
  }

  /** Forgets everything recorded. */
  public void clear() {
    entries.clear();
  }
}
