package dev.once.kafka;

import dev.once.Checkpoint;
import dev.once.IdempotencyKey;
import dev.once.InMemoryStore;
import dev.once.StoreUnavailableException;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.Completion;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.IdempotencyStore;
import dev.once.spi.Outcome;
import dev.once.testkit.Effects;
import dev.once.testkit.MemoryEffects;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.function.Supplier;

/** The consumer contract on {@link InMemoryStore}. */
class InMemoryStoreConsumerTest extends IdempotentConsumerContract {

  private static final InMemoryStore STORE = new InMemoryStore();

  @Override
  protected IdempotencyStore store() {
    return STORE;
  }

  @Override
  protected Effects newEffects() {
    return new MemoryEffects();
  }

  /**
   * A memory has no outage of its own: the store is seen through a view that fails every call
   * while the outage lasts, as a remote store does when its server is unreachable.
   */
  @Override
  protected StoreOutage outage() {
    Unreachable view = new Unreachable(STORE);
    return new StoreOutage() {
      @Override
      public IdempotencyStore store() {
        return view;
      }

      @Override
      public void begin() {
        view.down = true;
      }

      @Override
      public void end() {
        view.down = false;
      }
    };
  }

  /** {@code store}, unreachable while {@code down}. */
  private static final class Unreachable implements IdempotencyStore {
    private final IdempotencyStore store;
    volatile boolean down;

    Unreachable(IdempotencyStore store) {
      this.store = store;
    }

    private <T> T call(Supplier<T> call) {
      if (down) {
        throw new StoreUnavailableException("the store is unreachable (test outage)", null);
      }
      return call.get();
    }

    private void run(Runnable call) {
      call(() -> {
        call.run();
        return null;
      });
    }

    @Override
    public Claim claim(ClaimRequest request) {
      return call(() -> store.claim(request));
    }

    @Override
    public List<Claim> claimAll(List<ClaimRequest> requests) {
      return call(() -> store.claimAll(requests));
    }

    @Override
    public void complete(IdempotencyKey key, long token, Outcome outcome, Instant now,
        Duration retention) {
      run(() -> store.complete(key, token, outcome, now, retention));
    }

    @Override
    public Set<IdempotencyKey> completeAll(List<Completion> completions, Instant now,
        Duration retention) {
      return call(() -> store.completeAll(completions, now, retention));
    }

    @Override
    public void fail(IdempotencyKey key, long token, String error, Instant now,
        Duration retention) {
      run(() -> store.fail(key, token, error, now, retention));
    }

    @Override
    public Instant extend(IdempotencyKey key, long token, Instant now, Duration lease) {
      return call(() -> store.extend(key, token, now, lease));
    }

    @Override
    public void checkpoint(IdempotencyKey key, long token, Checkpoint checkpoint, Instant now) {
      run(() -> store.checkpoint(key, token, checkpoint, now));
    }

    @Override
    public Optional<IdempotencyRecord> find(IdempotencyKey key) {
      return call(() -> store.find(key));
    }

    @Override
    public int purgeExpired(Instant now, int limit) {
      return call(() -> store.purgeExpired(now, limit));
    }

    @Override
    public int reapExpiredLeases(Instant now, int limit) {
      return call(() -> store.reapExpiredLeases(now, limit));
    }

    @Override
    public int maxPayloadBytes() {
      return store.maxPayloadBytes();
    }
  }
}
