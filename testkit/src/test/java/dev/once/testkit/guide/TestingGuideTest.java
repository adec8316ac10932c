package dev.once.testkit.guide;

import static dev.once.testkit.OnceAssertions.assertThatKey;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.Codecs;
import dev.once.FailurePolicy;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.Once;
import dev.once.ReplayedFailureException;
import dev.once.Step;
import dev.once.batch.BatchExecutor;
import dev.once.batch.DeadLetter;
import dev.once.batch.ItemResult;
import dev.once.testkit.ManualClock;
import dev.once.testkit.OnceExtension;
import dev.once.testkit.OnceRecorder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The code of docs/testing.md, compiled and run by the build: an application's own service, a
 * consumer and a saga, each tested against Once with the testkit's extension and assertions.
 */
// --8<-- [start:extension]
@ExtendWith(OnceExtension.class)
class TestingGuideTest {
// --8<-- [end:extension]

  /** The application's code under test: charges a card through a gateway, once per order. */
  static final class Payments {
    final List<String> gateway = new ArrayList<>(); // stands for the payment gateway
    private final Once once;

    Payments(Once once) {
      this.once = once;
    }

    String charge(String orderId, long amount) {
      return once.execute(IdempotencyKey.of("payments.charge", orderId),
          Fingerprint.of(orderId + ":" + amount), Codecs.utf8(), attempt -> {
            gateway.add(orderId);
            return "ch_" + gateway.size();
          });
    }
  }

  // --8<-- [start:service]
  @Test
  void aRetriedChargeChargesOnce(Once once, OnceRecorder recorder) {
    Payments payments = new Payments(once);

    String first = payments.charge("order-42", 1250);
    String retry = payments.charge("order-42", 1250);    // the client retried

    assertThat(retry).isEqualTo(first);
    assertThat(payments.gateway).containsExactly("order-42");
    assertThatKey(once, recorder, IdempotencyKey.of("payments.charge", "order-42"))
        .ranOnce().succeeded().wasReplayed(1);
  }
  // --8<-- [end:service]

  // --8<-- [start:consumer]
  record Shipment(String id, String body) {}

  @Test
  void aPoisonMessageIsDeadLetteredOnceAndTheRestShipped(Once once, OnceRecorder recorder) {
    List<String> shipped = new ArrayList<>();
    List<DeadLetter<Shipment>> deadLetters = new ArrayList<>();
    BatchExecutor<Shipment> consumer = BatchExecutor.<Shipment>builder(
            once.toBuilder().failurePolicy(FailurePolicy.retryAll()
                .terminalOn(IllegalArgumentException.class)).build(),
            (shipment, attempt) -> {
              if (shipment.body().isEmpty()) {
                throw new IllegalArgumentException("no address");
              }
              shipped.add(shipment.id());
            })
        .scope("orders.ship").key(Shipment::id).fingerprint(s -> Fingerprint.of(s.body()))
        .deadLetters(deadLetters::add).build();
    List<Shipment> delivery = List.of(new Shipment("s1", "Main St 1"), new Shipment("s2", ""));

    consumer.process(delivery);
    List<ItemResult<Shipment>> redelivery = consumer.process(delivery).items(); // at least once

    assertThat(shipped).containsExactly("s1");
    assertThat(deadLetters).singleElement().extracting(DeadLetter::reason)
        .isEqualTo(DeadLetter.Reason.TERMINAL_FAILURE);
    assertThat(redelivery).allMatch(ItemResult::isFinal);
    assertThatKey(once, recorder, IdempotencyKey.of("orders.ship", "s2"))
        .ranOnce().failedFor(IllegalArgumentException.class);
  }
  // --8<-- [end:consumer]

  // --8<-- [start:saga]
  @Test
  void aSagaThatFailsUndoesItsStepsEvenWhenTheRetryTakesAnotherPath(Once base,
      OnceRecorder recorder, ManualClock clock) {
    List<String> effects = new ArrayList<>();
    Step<String> reserve = Step.of("reserve", Codecs.utf8())
        .compensate((stock, key) -> effects.add("release " + stock));
    Step<String> charge = Step.of("charge", Codecs.utf8())
        .compensate((chargeId, key) -> effects.add("refund " + chargeId));
    Once once = base.toBuilder().steps(reserve, charge)   // declared: any retry can undo them
        .failurePolicy(FailurePolicy.retryAll().terminalOn(IllegalArgumentException.class))
        .build();
    IdempotencyKey order = IdempotencyKey.of("orders.place", "o-7");

    assertThatThrownBy(() -> once.execute(order, Fingerprint.of("o-7"), Codecs.utf8(), a -> {
      a.step(reserve, k -> "stock-1");
      a.step(charge, k -> "ch-1");
      throw new IllegalArgumentException("address rejected");   // fails for good
    })).isInstanceOf(IllegalArgumentException.class);
    clock.advance(Duration.ofMinutes(1));
    assertThatThrownBy(() -> once.execute(order, Fingerprint.of("o-7"), Codecs.utf8(),
        a -> "a retry replays the failure")).isInstanceOf(ReplayedFailureException.class);

    assertThat(effects).containsExactly("refund ch-1", "release stock-1");
    assertThatKey(once, recorder, order).failedFor(IllegalArgumentException.class)
        .compensated("charge", "reserve");
  }
  // --8<-- [end:saga]
}
