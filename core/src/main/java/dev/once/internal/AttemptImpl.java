package dev.once.internal;

import dev.once.Attempt;
import dev.once.Checkpoint;
import dev.once.IdempotencyKey;
import dev.once.LeaseLostException;
import dev.once.Once;
import dev.once.PayloadTooLargeException;
import dev.once.Scheduler;
import dev.once.StoreUnavailableException;
import dev.once.spi.Claim;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

/**
 * The {@link Attempt} of one acquired claim, with its heartbeat. Public for the integrations that
 * claim keys themselves (the Kafka consumer's batch claims).
 */
public final class AttemptImpl implements Attempt {

  private static final System.Logger LOG = System.getLogger(Once.class.getName());

  private final IdempotencyKey key;
  private final long token;
  private final int attemptNumber;
  private final boolean takeover;
  private final Once.Config config;
  private final StoreCalls store;
  private volatile Instant leaseUntil;
  private volatile Checkpoint lastCheckpoint;
  private volatile boolean leaseLost;

  public AttemptImpl(IdempotencyKey key, Claim.Acquired acquired, Once.Config config,
      StoreCalls store) {
    this.key = key;
    this.token = acquired.token();
    this.attemptNumber = acquired.attempt();
    this.takeover = acquired.takeover();
    this.lastCheckpoint = acquired.checkpoint();
    this.leaseUntil = acquired.leaseUntil();
    this.config = config;
    this.store = store;
  }

  @Override
  public IdempotencyKey idempotencyKey() {
    return key;
  }

  @Override
  public String key() {
    return key.downstreamKey();
  }

  @Override
  public String key(String step) {
    return key.downstreamKey(step);
  }

  @Override
  public long token() {
    return token;
  }

  @Override
  public int attemptNumber() {
    return attemptNumber;
  }

  @Override
  public boolean takeover() {
    return takeover;
  }

  @Override
  public Instant leaseUntil() {
    return leaseUntil;
  }

  @Override
  public Optional<Checkpoint> lastCheckpoint() {
    return Optional.ofNullable(lastCheckpoint);
  }

  @Override
  public void checkpoint(String name, byte[] data) {
    Checkpoint checkpoint = Checkpoint.of(name, data);
    if (checkpoint.size() > config.maxPayloadBytes()) {
      throw new PayloadTooLargeException("checkpoint " + name, checkpoint.size(),
          config.maxPayloadBytes());
    }
    fenced(() -> store.checkpoint(key, token, checkpoint, config.clock().instant()));
    lastCheckpoint = checkpoint;
  }

  @Override
  public void extendLease() {
    fenced(() -> leaseUntil = store.extend(key, token, config.clock().instant(), config.lease()));
  }

  @Override
  public boolean isLeaseLost() {
    return leaseLost;
  }

  /**
   * Extends the lease every third of it until the task is cancelled, if the config has a
   * heartbeat scheduler; else null.
   */
  public Scheduler.Task startHeartbeat() {
    Scheduler scheduler = config.heartbeat();
    if (scheduler == null) {
      return null;
    }
    Duration period = config.lease().dividedBy(3);
    return scheduler.scheduleAtFixedRate(this::heartbeat,
        period.isZero() ? Duration.ofMillis(1) : period);
  }

  /** One heartbeat: extends the lease; a transient store error waits for the next beat. */
  void heartbeat() {
    if (leaseLost) {
      return;
    }
    try {
      extendLease();
    } catch (LeaseLostException e) {
      LOG.log(System.Logger.Level.WARNING, "heartbeat found the lease on {0} lost", key);
    } catch (StoreUnavailableException e) {
      LOG.log(System.Logger.Level.WARNING, "heartbeat could not extend the lease on " + key, e);
    }
  }

  private void fenced(Runnable write) {
    try {
      write.run();
    } catch (LeaseLostException e) {
      leaseLost = true;
      throw e;
    }
  }
}
