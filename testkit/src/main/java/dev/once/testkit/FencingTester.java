package dev.once.testkit;

import static dev.once.testkit.StoreConformanceSuite.LEASE;
import static dev.once.testkit.StoreConformanceSuite.RETENTION;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.Checkpoint;
import dev.once.IdempotencyKey;
import dev.once.LeaseLostException;
import dev.once.spi.Claim;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.Status;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Fencing tokens: a zombie's writes after a takeover or a retry change nothing, and a key's
 * token never repeats across retries, takeovers and expiry.
 */
abstract class FencingTester extends ConformanceTester {

  FencingTester(StoreConformanceSuite suite) {
    super(suite);
  }

  @Test
  void zombieAfterTakeoverChangesNothing() {
    IdempotencyKey key = newKey();
    Claim.Acquired zombie = acquire(key);
    store.checkpoint(key, zombie.token(), Checkpoint.of("step-1", new byte[] {1}), clock.instant());
    clock.set(zombie.leaseUntil());
    Claim.Acquired successor = acquire(key);
    IdempotencyRecord before = record(key);

    long stale = zombie.token();
    assertThatThrownBy(() -> complete(key, stale, text("zombie")))
        .isInstanceOf(LeaseLostException.class)
        .satisfies(e -> assertThat(((LeaseLostException) e).token()).isEqualTo(stale));
    assertThatThrownBy(() -> store.fail(key, stale, "zombie", clock.instant(), RETENTION))
        .isInstanceOf(LeaseLostException.class);
    assertThatThrownBy(() -> store.checkpoint(key, stale, Checkpoint.of("zombie", new byte[2]),
        clock.instant())).isInstanceOf(LeaseLostException.class);
    assertThatThrownBy(() -> store.extend(key, stale, clock.instant(), LEASE))
        .isInstanceOf(LeaseLostException.class);

    assertThat(record(key)).isEqualTo(before);
    complete(key, successor.token(), text("successor"));
    assertThat(claim(key)).isEqualTo(new Claim.Replay(text("successor"), successor.token()));
  }

  @Test
  void zombieAfterRetryChangesNothing() {
    IdempotencyKey key = newKey();
    Claim.Acquired first = acquire(key);
    store.fail(key, first.token(), "timeout", clock.instant(), RETENTION);
    Claim.Acquired retry = acquire(key);

    assertThatThrownBy(() -> complete(key, first.token(), text("zombie")))
        .isInstanceOf(LeaseLostException.class);

    assertThat(record(key).token()).isEqualTo(retry.token());
    assertThat(record(key).status()).isEqualTo(Status.IN_PROGRESS);
  }

  @Test
  void tokenNeverRepeatsAcrossRetriesTakeoversAndExpiry() {
    IdempotencyKey key = newKey();
    List<Long> tokens = new ArrayList<>();
    Claim.Acquired a = acquire(key);
    tokens.add(a.token());
    store.fail(key, a.token(), "retry", clock.instant(), RETENTION);
    Claim.Acquired b = acquire(key);
    tokens.add(b.token());
    clock.set(b.leaseUntil());
    Claim.Acquired c = acquire(key);
    tokens.add(c.token());
    complete(key, c.token(), text("done"));
    clock.advance(RETENTION);
    Claim.Acquired d = acquire(key);
    tokens.add(d.token());

    long t = tokens.get(0);
    assertThat(tokens).containsExactly(t, t + 1, t + 2, t + 3);
    assertThat(d.takeover()).isFalse();
    assertThat(d.attempt()).isEqualTo(1);
  }
}
