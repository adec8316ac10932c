package dev.once.cli.demo;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.cli.demo.DeliveryPlan.Message;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

class DeliveryPlanTest {

  @Test
  void everyEventIsPublishedAtLeastOnce() {
    DeliveryPlan plan = DeliveryPlan.generate(1000, 0.3, 0.05, 42);

    Set<Integer> published = plan.messages().stream().map(Message::event)
        .collect(Collectors.toSet());
    assertThat(published).hasSize(1000);
    assertThat(plan.messages().size()).isBetween(1250, 1500);
  }

  @Test
  void theSeedFixesThePlan() {
    assertThat(DeliveryPlan.generate(500, 0.3, 0.1, 9))
        .isEqualTo(DeliveryPlan.generate(500, 0.3, 0.1, 9))
        .isNotEqualTo(DeliveryPlan.generate(500, 0.3, 0.1, 10));
  }

  @Test
  void certainDuplicatesAndCrashesAreBounded() {
    DeliveryPlan plan = DeliveryPlan.generate(100, 1.0, 1.0, 1);

    assertThat(plan.messages()).hasSize(100 * (1 + DeliveryPlan.MAX_EXTRA_COPIES));
    assertThat(plan.messages()).allSatisfy(m ->
        assertThat(m.plannedCrashes()).isEqualTo(DeliveryPlan.MAX_CRASHES_PER_MESSAGE));
  }

  @Test
  void noDuplicatesNoCrashesIsOneCleanDeliveryPerEvent() {
    DeliveryPlan plan = DeliveryPlan.generate(100, 0, 0, 1);

    assertThat(plan.messages()).hasSize(100);
    assertThat(plan.plannedCrashes()).isZero();
  }
}
