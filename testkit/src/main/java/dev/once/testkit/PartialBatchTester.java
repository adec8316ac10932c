package dev.once.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.once.IdempotencyKey;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Faults: a batch claim that fails part-way inside the store (the key made to fail by
 * {@link StoreConformanceSuite#poison}) leaves nothing claimed. Skipped for a store that cannot
 * inject the fault.
 */
abstract class PartialBatchTester extends ConformanceTester {

  PartialBatchTester(StoreConformanceSuite suite) {
    super(suite);
  }

  private void failsAt(int bad, int size) {
    List<IdempotencyKey> keys = new ArrayList<>();
    for (int i = 0; i < size; i++) {
      keys.add(newKey());
    }
    assumeTrue(poison(keys.get(bad)), "the store cannot inject a claim fault");
    List<ClaimRequest> batch = new ArrayList<>();
    keys.forEach(k -> batch.add(request(k, FP)));
    try {
      assertThatThrownBy(() -> store.claimAll(batch)).isInstanceOf(RuntimeException.class);
    } finally {
      heal(keys.get(bad));
    }

    // Nothing of the batch is held: every key is claimable at once, by anyone, and the claims
    // given back (their work never ran) count no attempt.
    for (IdempotencyKey key : keys) {
      assertThat(store.claim(request(key, FP))).as("%s after the failed batch", key)
          .isInstanceOfSatisfying(Claim.Acquired.class,
              acquired -> assertThat(acquired.attempt()).isEqualTo(1));
    }
  }

  @Test
  void failingFirstLeavesNothingClaimed() {
    failsAt(0, 3);
  }

  @Test
  void failingInTheMiddleLeavesNothingClaimed() {
    failsAt(1, 3);
  }

  @Test
  void failingLastLeavesNothingClaimed() {
    failsAt(2, 3);
  }

  @Test
  void failingInTheMiddleOfALargeBatchLeavesNothingClaimed() {
    failsAt(17, 40);
  }
}
