package dev.once.kafka.internal;

import dev.once.Attempt;
import dev.once.Checkpoint;
import dev.once.IdempotencyKey;
import dev.once.LeaseLostException;
import dev.once.Once;
import dev.once.PayloadTooLargeException;
import dev.once.StoreUnavailableException;
import dev.once.spi.Claim;
import java.time.Instant;
import java.util.Optional;

/** The {@link Attempt} of a record whose key this consumer acquired. */
final class RecordAttempt implements Attempt {

  private static final System.Logger LOG = System.getLogger(RecordAttempt.class.getName());

  private final IdempotencyKey key;
  private final Claim.Acquired acquired;
  private final Once.Config config;
  private volatile Instant leaseUntil;
  private volatile Checkpoint lastCheckpoint;
  private volatile boolean leaseLost;

  RecordAttempt(IdempotencyKey key, Claim.Acquired acquired, Once.Config config) {
    this.key = key;
    this.acquired = acquired;
    this.config = config;
    this.leaseUntil = acquired.leaseUntil();
    this.lastCheckpoint = acquired.checkpoint();
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
    return acquired.token();
  }

  @Override
  public int attemptNumber() {
    return acquired.attempt();
  }

  @Override
  public boolean takeover() {
    return acquired.takeover();
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
    fenced(() -> config.store().checkpoint(key, token(), checkpoint, config.clock().instant()));
    lastCheckpoint = checkpoint;
  }

  @Override
  public void extendLease() {
    fenced(() -> leaseUntil =
        config.store().extend(key, token(), config.clock().instant(), config.lease()));
  }

  @Override
  public boolean isLeaseLost() {
    return leaseLost;
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
