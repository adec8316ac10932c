package dev.once.redis;

import dev.once.support.Checks;
import java.time.Duration;
import java.util.Objects;

/**
 * How sure a write must be before the store answers. Redis acknowledges a write once it is in the
 * primary's memory; what survives a crash depends on the server's persistence and replication, so
 * the grade is chosen here and on the server together:
 *
 * <ul>
 *   <li>{@link #plain()}: the primary's acknowledgement. Fastest. A crash of the primary can lose
 *       the writes of the last second (AOF {@code appendfsync everysec}) or everything since the
 *       last snapshot; a failover can lose what the replica had not received.
 *   <li>{@link #replicas(int, Duration)}: after each write the store sends {@code WAIT n timeout}
 *       and answers only once {@code n} replicas acknowledged it; fewer in time throws
 *       {@link dev.once.StoreUnavailableException}. Survives the loss of the primary (not of all
 *       copies at once). Costs a replica round trip per write.
 *   <li>AOF with {@code appendfsync always} is a server setting, not a client one: every write is
 *       fsynced before Redis answers, so a restarted server keeps every acknowledged record. Use it
 *       with {@link #plain()} on a single server, or with {@link #replicas} for both.
 * </ul>
 *
 * <p>See the module README for when Redis is a safe store for Once and when only an efficiency
 * lock. Immutable.
 */
public final class Durability {

  private static final Durability PLAIN = new Durability(0, Duration.ZERO);

  private final int replicas;
  private final Duration timeout;

  private Durability(int replicas, Duration timeout) {
    this.replicas = replicas;
    this.timeout = timeout;
  }

  /** The primary's acknowledgement only (the default). */
  public static Durability plain() {
    return PLAIN;
  }

  /**
   * Every write waits ({@code WAIT}) until {@code replicas} replicas acknowledged it, at most
   * {@code timeout}; fewer acknowledgements throw {@link dev.once.StoreUnavailableException}.
   *
   * @param replicas at least 1
   * @param timeout  positive; counts on top of the write itself and should stay below the store's
   *                 command timeout
   */
  public static Durability replicas(int replicas, Duration timeout) {
    Checks.positive(replicas, "replicas");
    Objects.requireNonNull(timeout, "timeout");
    Checks.positive(timeout, "timeout");
    if (timeout.toMillis() < 1) {
      throw new IllegalArgumentException("timeout must be at least 1 ms, was " + timeout);
    }
    return new Durability(replicas, timeout);
  }

  /** How many replicas must acknowledge each write; 0 for {@link #plain()}. */
  public int replicas() {
    return replicas;
  }

  /** How long a write waits for the replicas; zero for {@link #plain()}. */
  public Duration timeout() {
    return timeout;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Durability other && replicas == other.replicas
        && timeout.equals(other.timeout);
  }

  @Override
  public int hashCode() {
    return replicas * 31 + timeout.hashCode();
  }

  @Override
  public String toString() {
    return replicas == 0 ? "Durability[plain]"
        : "Durability[WAIT " + replicas + " replicas, " + timeout.toMillis() + " ms]";
  }
}
