package dev.once.cli.support;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * The progress bar's arithmetic at the edges (issue 18); the demo drawing it:
 * {@code DemoProgressTest}.
 */
class ProgressTest {

  @Test
  void countsOutsideTheTotalAreDrawnAsTheNearestBound() {
    assertThat(Progress.line("with Once", -4, 10, 80))
        .isEqualTo("with Once [" + " ".repeat(Progress.MAX_BAR) + "] 0/10");
    assertThat(Progress.line("with Once", 12, 10, 80))
        .isEqualTo("with Once [" + "#".repeat(Progress.MAX_BAR) + "] 10/10");
    assertThat(Progress.line("with Once", Long.MIN_VALUE, Long.MAX_VALUE, 200))
        .endsWith("] 0/" + Long.MAX_VALUE);
  }

  @Test
  void theBarFillsInProportionAndANothingToDoIsDone() {
    assertThat(Progress.line("x", 5, 10, 80))
        .isEqualTo("x [" + "#".repeat(15) + " ".repeat(15) + "] 5/10");
    assertThat(Progress.line("x", 1, 3, 80)).contains("[" + "#".repeat(10) + " ");
    assertThat(Progress.line("x", 0, 0, 80)).isEqualTo("x [" + "#".repeat(30) + "] 0/0");
    assertThat(Progress.line("x", 3, -1, 80)).isEqualTo("x [" + "#".repeat(30) + "] 0/0");
    // No overflow: bar × done fits in a long for any count the demo can have, and beyond.
    assertThat(Progress.line("x", Long.MAX_VALUE / 2, Long.MAX_VALUE, 300))
        .contains("[" + "#".repeat(15) + " ".repeat(15) + "]");
  }

  @Test
  void theLineNeverReachesTheLastColumn() {
    for (int columns = -1; columns <= 130; columns++) {
      for (long total : new long[] {0, 9, 1_529, 4_000_000, Long.MAX_VALUE}) {
        String line = Progress.line("without Once", total / 3, total, columns);
        assertThat(line.length()).as("%d columns, total %d", columns, total)
            .isLessThanOrEqualTo(Math.max(1, columns - 1));
      }
    }
    // Narrow: the bar shrinks, then goes, before the counts are cut.
    assertThat(Progress.line("without Once", 500, 1529, 50))
        .isEqualTo("without Once [" + "#".repeat(8) + " ".repeat(17) + "] 500/1529")
        .hasSize(49);
    assertThat(Progress.line("without Once", 500, 1529, 30))
        .isEqualTo("without Once [#    ] 500/1529");
    assertThat(Progress.line("without Once", 500, 1529, 28)).isEqualTo("without Once 500/1529");
    assertThat(Progress.line("without Once", 500, 1529, 10)).isEqualTo("500/1529");
    assertThat(Progress.line("without Once", 500, 1529, 5)).isEqualTo("500/");
  }

  @Test
  void onlyAPositiveColumnCountIsAWidth() {
    assertThat(Progress.parseColumns(" 80\n")).isEqualTo(80);
    assertThat(Progress.parseColumns("0")).isNull();
    assertThat(Progress.parseColumns("-3")).isNull();
    assertThat(Progress.parseColumns("wide")).isNull();
    assertThat(Progress.parseColumns(null)).isNull();
  }
}
