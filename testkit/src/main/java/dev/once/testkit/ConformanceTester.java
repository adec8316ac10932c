package dev.once.testkit;

import static dev.once.testkit.StoreConformanceSuite.LEASE;
import static dev.once.testkit.StoreConformanceSuite.RETENTION;
import static org.assertj.core.api.Assertions.assertThat;

import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.Once;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.IdempotencyStore;
import dev.once.spi.Outcome;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.BeforeEach;

/**
 * What every tester of the conformance suite shares: the suite's store, clock and scope for the
 * running test, the fingerprints it claims with, and the helpers its tests are written in.
 *
 * <p>A tester holds the tests of one concern; {@link StoreConformanceSuite} runs each as a
 * {@code @Nested} class, so a store author extends the suite and never a tester. The suite opens
 * the store before each test (an enclosing class's {@code @BeforeEach} runs first); the tester
 * then takes it, with the clock and scope, in {@link #useTheSuitesFixture}.
 */
abstract class ConformanceTester {

  static final Fingerprint FP = Fingerprint.of("request-A");
  static final Fingerprint OTHER_FP = Fingerprint.of("request-B");
  static final Duration NANO = Duration.ofNanos(1);

  private final StoreConformanceSuite suite;

  /** The suite's store for this test. */
  IdempotencyStore store;
  /** The suite's clock for this test. */
  ManualClock clock;
  /** The scope of every key this test uses. */
  String scope;

  ConformanceTester(StoreConformanceSuite suite) {
    this.suite = suite;
  }

  @BeforeEach
  void useTheSuitesFixture() {
    store = suite.store;
    clock = suite.clock;
    scope = suite.scope;
  }

  // What the store author's suite provides (and may override).

  IdempotencyKey newKey() {
    return suite.newKey();
  }

  ClaimRequest request(IdempotencyKey key, Fingerprint fingerprint) {
    return suite.request(key, fingerprint);
  }

  boolean poison(IdempotencyKey key) {
    return suite.poison(key);
  }

  void heal(IdempotencyKey key) {
    suite.heal(key);
  }

  IdempotencyStore anotherClient() {
    return suite.anotherClient();
  }

  // The helpers the tests are written in.

  Claim claim(IdempotencyKey key) {
    return store.claim(request(key, FP));
  }

  Claim.Acquired acquire(IdempotencyKey key) {
    Claim claim = claim(key);
    assertThat(claim).isInstanceOf(Claim.Acquired.class);
    return (Claim.Acquired) claim;
  }

  IdempotencyRecord record(IdempotencyKey key) {
    Optional<IdempotencyRecord> found = store.find(key);
    assertThat(found).as("record of %s", key).isPresent();
    return found.get();
  }

  static Outcome text(String body) {
    return Outcome.success("text/plain", body.getBytes(StandardCharsets.UTF_8));
  }

  void complete(IdempotencyKey key, long token, Outcome outcome) {
    store.complete(key, token, outcome, clock.instant(), RETENTION);
  }

  Once once(Once.Builder builder) {
    return builder.clock(clock).lease(LEASE).retention(RETENTION).build();
  }
}
