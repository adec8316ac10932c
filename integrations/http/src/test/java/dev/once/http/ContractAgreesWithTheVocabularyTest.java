package dev.once.http;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.testkit.http.HttpIdempotencyContract;
import dev.once.testkit.http.HttpIdempotencyContract.Problem;
import org.junit.jupiter.api.Test;

/**
 * The published HTTP contract pins the wire values of each problem on its own (it is black-box);
 * this keeps it and the one definition adapters answer from in step.
 */
class ContractAgreesWithTheVocabularyTest {

  @Test
  void everyProblemHasTheSameStatusTypeTitleAndHeaders() {
    assertThat(HttpIdempotencyContract.TYPE_BASE).isEqualTo(IdempotencyProblem.TYPE_BASE);
    assertThat(Problem.values()).hasSameSizeAs(IdempotencyProblem.values());
    for (IdempotencyProblem problem : IdempotencyProblem.values()) {
      Problem expected = Problem.valueOf(problem.name());
      assertThat(problem.status()).as("%s status", problem).isEqualTo(expected.status());
      assertThat(problem.type()).as("%s type", problem).isEqualTo(expected.type());
      assertThat(problem.title()).as("%s title", problem).isEqualTo(expected.title());
      assertThat(problem.retryAfter()).as("%s Retry-After", problem)
          .isEqualTo(expected.retryAfter());
      assertThat(problem.replayed()).as("%s replayed", problem).isEqualTo(expected.replayed());
    }
  }
}
