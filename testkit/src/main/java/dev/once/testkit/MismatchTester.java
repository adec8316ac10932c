package dev.once.testkit;

import static dev.once.testkit.StoreConformanceSuite.RETENTION;
import static org.assertj.core.api.Assertions.assertThat;

import dev.once.IdempotencyKey;
import dev.once.spi.Claim;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.Outcome;
import org.junit.jupiter.api.Test;

/**
 * A claim of a key with another fingerprint: refused in every state, leaving the record alone,
 * until retention ends and the key behaves as new.
 */
abstract class MismatchTester extends ConformanceTester {

  MismatchTester(StoreConformanceSuite suite) {
    super(suite);
  }

  private void assertMismatchLeavesRecordAlone(IdempotencyKey key) {
    IdempotencyRecord before = record(key);
    assertThat(store.claim(request(key, OTHER_FP))).isEqualTo(new Claim.Mismatch());
    assertThat(record(key)).isEqualTo(before);
  }

  @Test
  void whileInProgress() {
    IdempotencyKey key = newKey();
    acquire(key);
    assertMismatchLeavesRecordAlone(key);
  }

  @Test
  void afterTheLeasePassed() {
    IdempotencyKey key = newKey();
    clock.set(acquire(key).leaseUntil());
    assertMismatchLeavesRecordAlone(key);
  }

  @Test
  void afterCompletion() {
    IdempotencyKey key = newKey();
    complete(key, acquire(key).token(), text("done"));
    assertMismatchLeavesRecordAlone(key);
  }

  @Test
  void afterTerminalFailure() {
    IdempotencyKey key = newKey();
    complete(key, acquire(key).token(), Outcome.failure("E", "m"));
    assertMismatchLeavesRecordAlone(key);
  }

  @Test
  void afterRetryableFailure() {
    IdempotencyKey key = newKey();
    store.fail(key, acquire(key).token(), "x", clock.instant(), RETENTION);
    assertMismatchLeavesRecordAlone(key);
  }

  @Test
  void notAfterRetentionWhenTheKeyBehavesAsNew() {
    IdempotencyKey key = newKey();
    complete(key, acquire(key).token(), text("done"));
    clock.advance(RETENTION);

    Claim claim = store.claim(request(key, OTHER_FP));

    assertThat(claim).isInstanceOf(Claim.Acquired.class);
    assertThat(record(key).fingerprint()).isEqualTo(OTHER_FP);
  }
}
