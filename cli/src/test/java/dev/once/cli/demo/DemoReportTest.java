package dev.once.cli.demo;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.cli.support.Latencies;
import java.time.Duration;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** The HTML report's charts and metadata, on figures made up for the purpose (issue 18). */
class DemoReportTest {

  private static final DemoReport.RunInfo INFO = new DemoReport.RunInfo(
      ZonedDateTime.of(2026, 11, 24, 9, 30, 0, 0, ZoneOffset.UTC), "0.1.0-SNAPSHOT",
      "17.0.15 (Debian, OpenJDK)", "Linux 6.1 amd64", 2, "sqlite:/tmp/once.db", 42,
      "500 events, 30% redelivered");

  @Test
  void axesHaveSeveralRoundTicksUpToTheFirstAtOrAboveTheMaximum() {
    DemoReport.Axis axis = DemoReport.Axis.of(10_170);
    assertThat(axis.step()).isEqualTo(2_000);
    assertThat(axis.max()).isEqualTo(12_000);
    assertThat(axis.ticks()).containsExactly(0.0, 2_000.0, 4_000.0, 6_000.0, 8_000.0, 10_000.0,
        12_000.0);
    assertThat(DemoReport.Axis.of(0.21).ticks()).containsExactly(0.0, 0.05, 0.1, 0.15, 0.2,
        0.25);
    assertThat(DemoReport.Axis.of(0).max()).isEqualTo(1);
    for (double max : new double[] {1, 3, 7, 9.99, 10, 49, 101, 999, 1_254, 65_432}) {
      DemoReport.Axis a = DemoReport.Axis.of(max);
      assertThat(a.max()).as("%s", max).isGreaterThanOrEqualTo(max);
      assertThat(a.ticks()).as("%s", max).hasSizeBetween(4, 9);
    }
    assertThat(DemoReport.Axis.format(2_500)).isEqualTo("2.5k");
    assertThat(DemoReport.Axis.format(0.15)).isEqualTo("0.15");
    assertThat(DemoReport.Axis.format(40)).isEqualTo("40");
    assertThat(DemoReport.Axis.format(1_200_000)).isEqualTo("1.2M");
  }

  @Test
  void aShortRunAndALongOneBothGetAReadableLine() {
    assertThat(DemoReport.displayBucketMillis(210)).isEqualTo(10);
    assertThat(DemoReport.displayBucketMillis(3_400)).isEqualTo(50);
    assertThat(DemoReport.displayBucketMillis(120_000)).isEqualTo(2_000);

    // 0.2 s at 10 000/s, then 6 s at about 1 000/s: each chart is scaled to its own run.
    String fast = DemoReport.throughput(constant(20, 100), 200, "#999", 10_000);
    String slow = DemoReport.throughput(constant(600, 10), 6_000, "#1565c0", 1_000);
    assertThat(yLabels(fast)).contains("10k").doesNotContain("100k");
    assertThat(yLabels(slow)).contains("1k").doesNotContain("10k");
    assertThat(fast).contains(">0.2 s<").doesNotContain(">6 s<");
    assertThat(slow).contains(">6 s<");
  }

  @Test
  void theReportNamesTheRunAndComparesTheReceipts() {
    DemoResult result = new DemoResult(figures(null, 120), figures(new long[] {40, 40, 0}, 0));

    String html = DemoReport.html("once demo", INFO, DemoCommand.rows(result), result);

    assertThat(html).contains("<dt>date</dt><dd>2026-11-24 09:30:00 +00:00 (Z)</dd>",
        "<dt>Once</dt><dd>0.1.0-SNAPSHOT</dd>", "<dt>Java</dt><dd>17.0.15 (Debian, OpenJDK)</dd>",
        "<dt>machine</dt><dd>Linux 6.1 amd64, 2 CPUs</dd>",
        "<dt>store</dt><dd>sqlite:/tmp/once.db</dd>", "<dt>seed</dt><dd>42</dd>")
        .contains("<td>without Once: mail in the handler</td><td>620</td>"
            + "<td class=\"bad\">120</td>", "<td>2. Once, attempt.key() sent (ignored)</td>"
            + "<td>540</td><td class=\"bad\">40</td>", "<td>3. Once, mail in a Step + "
            + "reconciler</td><td>500</td><td class=\"good\">0</td>")
        .contains("without Once: 1500 deliveries in 0.20 s, 7500/s on average",
            "with Once: 1600 deliveries in 4.00 s, 400/s on average", "average 7500/s")
        .doesNotContain("NaN", "Infinity");
  }

  private static DemoResult.Figures figures(long[] doubled, int doubleCharges) {
    boolean once = doubled != null;
    DemoResult.Mails inWork = new DemoResult.Mails(500 + (once ? doubled[0] : doubleCharges),
        once ? (int) doubled[0] : doubleCharges, 0);
    DemoResult.Receipts receipts = once
        ? new DemoResult.Receipts(inWork, new DemoResult.Mails(500 + doubled[1],
            (int) doubled[1], 0), new DemoResult.Mails(500, (int) doubled[2], 0), 38, 2)
        : new DemoResult.Receipts(inWork, null, null, 0, 0);
    Duration elapsed = once ? Duration.ofSeconds(4) : Duration.ofMillis(200);
    long[] timeline = once ? constant(400, 4) : constant(20, 75);
    Latencies latencies = new Latencies();
    if (once) {
      for (int i = 0; i < 1600; i++) {
        latencies.record(50_000 + i * 1_000L);
      }
    }
    return new DemoResult.Figures(500, once ? 1600 : 1500, 30, once ? 500 : 1500,
        once ? 40 : 0, doubleCharges, 0, once ? 600 : 0, once ? 100 : 0, once ? 40 : 0,
        once ? 5 : 0, 0, 0, elapsed, once ? latencies.summary() : null, receipts, timeline);
  }

  private static long[] constant(int buckets, long perBucket) {
    long[] counts = new long[buckets];
    java.util.Arrays.fill(counts, perBucket);
    return counts;
  }

  /** The labels of the y axis: right-aligned texts left of the plot. */
  private static java.util.List<String> yLabels(String svg) {
    java.util.List<String> labels = new java.util.ArrayList<>();
    Matcher m = Pattern.compile("text-anchor=\"end\" fill=\"#757575\">([^<]+)</text>")
        .matcher(svg);
    while (m.find()) {
      labels.add(m.group(1));
    }
    return labels;
  }
}
