package dev.once.cli.demo;

import java.io.IOException;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The HTML report of {@code once demo}: the run's metadata, the audit table, the receipts mailed
 * twice per way of calling a mailer without idempotency, a histogram of the latency Once added and
 * the throughput of each run over time. One self-contained file (inline SVG, no script, nothing
 * fetched), so it opens from disk in any browser and can be attached to a ticket.
 *
 * <p>Each run's throughput has a chart of its own, with its own scales: the run without Once is
 * over in a fraction of a second at many times the rate, and on shared axes it would flatten the
 * run with Once into a line along the bottom.
 */
final class DemoReport {

  /** Histogram bucket bounds in nanoseconds: 1-2-5 steps from 10 µs to 10 s. */
  static final long[] BOUNDS = bounds();

  /** Display buckets for throughput, in milliseconds: the smallest giving at most MAX_POINTS. */
  static final long[] DISPLAY_BUCKETS_MILLIS = {10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000,
      10_000};
  static final int MAX_POINTS = 100;

  private static final int WIDTH = 760;
  private static final int LEFT = 70;
  private static final int RIGHT = 20;
  private static final int TOP = 30;
  private static final int BOTTOM = 44;
  private static final String BLUE = "#1565c0";
  private static final String GREY = "#757575";
  private static final String RED = "#b00020";
  private static final String GREEN = "#0a7d32";

  private DemoReport() {}

  /**
   * One row of the audit table: label, without Once ("-" when it has no meaning), with Once; a
   * row whose values are both empty is a section heading.
   */
  record Row(String label, String without, String with) {
    boolean heading() {
      return without.isEmpty() && with.isEmpty();
    }
  }

  /**
   * What ran where: printed at the top of the report, so that a report attached to a ticket says
   * which build, machine and settings made its figures.
   *
   * @param date        when the run ended
   * @param onceVersion the version of Once
   * @param java        the JVM's version and vendor
   * @param os          operating system, version and architecture
   * @param cpus        processors available to the JVM
   * @param store       the store, password masked
   * @param seed        the seed of the delivery plan
   * @param settings    the other options of the run
   */
  record RunInfo(ZonedDateTime date, String onceVersion, String java, String os, int cpus,
      String store, long seed, String settings) {

    /** This JVM and machine, now. */
    static RunInfo now(String onceVersion, String store, long seed, String settings) {
      return new RunInfo(ZonedDateTime.now(), onceVersion,
          System.getProperty("java.version") + " (" + System.getProperty("java.vendor") + ", "
              + System.getProperty("java.vm.name") + ")",
          System.getProperty("os.name") + " " + System.getProperty("os.version") + " "
              + System.getProperty("os.arch"),
          Runtime.getRuntime().availableProcessors(), store, seed, settings);
    }
  }

  static void write(Path file, String title, RunInfo info, List<Row> rows, DemoResult result)
      throws IOException {
    Path parent = file.toAbsolutePath().getParent();
    if (parent != null) {
      Files.createDirectories(parent);
    }
    Files.writeString(file, html(title, info, rows, result), StandardCharsets.UTF_8);
  }

  static String html(String title, RunInfo info, List<Row> rows, DemoResult result) {
    StringBuilder h = new StringBuilder(65_536);
    h.append("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">")
        .append("<title>").append(escape(title)).append("</title><style>")
        .append("body{font:15px/1.45 system-ui,sans-serif;max-width:820px;margin:2em auto;")
        .append("padding:0 1em;color:#222}table{border-collapse:collapse;margin:1em 0}")
        .append("td,th{padding:.25em .8em;border-bottom:1px solid #ddd;text-align:right}")
        .append("td:first-child,th:first-child{text-align:left;white-space:pre}")
        .append("th.section{padding-top:.9em;font-weight:600}")
        .append(".bad{color:#b00020;font-weight:600}.good{color:#0a7d32;font-weight:600}")
        .append("svg{background:#fafafa;border:1px solid #eee;display:block}")
        .append("figure{margin:1em 0}figcaption{color:#555;font-size:13px;max-width:760px}")
        .append("dl.meta{display:grid;grid-template-columns:max-content auto;gap:.1em 1em;")
        .append("font-size:13px;color:#444;margin:.5em 0 1.5em}dl.meta dt{font-weight:600}")
        .append("dl.meta dd{margin:0}</style></head><body>\n");
    h.append("<h1>").append(escape(title)).append("</h1>\n");
    meta(h, info);

    DemoResult.Figures with = result.withOnce();
    DemoResult.Figures without = result.withoutOnce();
    DemoResult.Receipts receipts = with.receipts();
    h.append("<p class=\"").append(result.onceHeld() ? "good" : "bad").append("\">With Once: ")
        .append(with.doubleCharges()).append(" double charges, ").append(with.lostEvents())
        .append(" lost events, ").append(receipts.inStep().doubled())
        .append(" receipts mailed twice from a Step. Without: ").append(without.doubleCharges())
        .append(" double charges.</p>\n");

    h.append("<table><tr><th></th><th>without Once</th><th>with Once</th></tr>\n");
    for (Row row : rows) {
      if (row.heading()) {
        h.append("<tr><th class=\"section\" colspan=\"3\">").append(escape(row.label()))
            .append("</th></tr>\n");
      } else {
        h.append("<tr><td>").append(escape(row.label())).append("</td><td>")
            .append(escape(row.without())).append("</td><td>").append(escape(row.with()))
            .append("</td></tr>\n");
      }
    }
    h.append("</table>\n");

    receipts(h, without.receipts(), receipts);

    if (with.addedLatency() != null && with.addedLatency().count() > 0) {
      h.append("<h2 id=\"latency\">Latency Once added per delivery</h2>\n<figure>")
          .append(histogram(with.addedLatency().histogram(BOUNDS)))
          .append("<figcaption>Deliveries by time spent in Once: the claim, the receipt step's "
              + "journal writes, and the completion or replay; the charge and the mails "
              + "themselves excluded. Log-scale buckets; a takeover's wait for the crashed "
              + "worker's lease is not in it (that delivery was answered \u201cin progress\u201d "
              + "and came back).</figcaption></figure>\n");
    }

    h.append("<h2 id=\"throughput\">Throughput over time</h2>\n");
    h.append("<p>Each run on its own scales: without Once the workers never wait, so that run is "
        + "over much sooner, at a higher rate.</p>\n");
    throughputFigure(h, "without Once", without, GREY,
        "Deliveries handled per second. Every delivery charges and mails, duplicates included.");
    throughputFigure(h, "with Once", with, BLUE,
        "Deliveries handled per second. The dips are crashed workers' leases running out before "
            + "a takeover; redeliveries meanwhile are answered \u201cin progress\u201d.");
    h.append("</body></html>\n");
    return h.toString();
  }

  private static void meta(StringBuilder h, RunInfo info) {
    h.append("<dl class=\"meta\">");
    metaRow(h, "date", info.date().format(DateTimeFormatter.ofPattern(
        "yyyy-MM-dd HH:mm:ss xxx (VV)", Locale.ROOT)));
    metaRow(h, "Once", info.onceVersion());
    metaRow(h, "Java", info.java());
    metaRow(h, "machine", info.os() + ", " + info.cpus() + " CPU" + (info.cpus() == 1 ? "" : "s"));
    metaRow(h, "store", info.store());
    metaRow(h, "seed", Long.toString(info.seed()));
    metaRow(h, "settings", info.settings());
    h.append("</dl>\n");
  }

  private static void metaRow(StringBuilder h, String name, String value) {
    h.append("<dt>").append(escape(name)).append("</dt><dd>").append(escape(value))
        .append("</dd>");
  }

  /** The steps comparison: a table and a bar chart of the receipts mailed twice per variant. */
  private static void receipts(StringBuilder h, DemoResult.Receipts without,
      DemoResult.Receipts with) {
    h.append("<h2 id=\"receipts\">Receipts through a mailer with no idempotency</h2>\n<p>Every event's receipt "
        + "goes to a mailer that sends a mail on every call and ignores any idempotency key; it "
        + "can only be searched afterwards (\u201cthe mail sent with reference R\u201d). The same "
        + "workers, with the same crashes, mail it three ways. The crash strikes after the mail "
        + "and before anything recorded it: Once's completion for 1 and 2, the step's journal "
        + "for 3.</p>\n");
    List<String> labels = List.of("without Once: mail in the handler",
        "1. Once, mail sent in the work", "2. Once, attempt.key() sent (ignored)",
        "3. Once, mail in a Step + reconciler");
    List<DemoResult.Mails> mails = List.of(without.inWork(), with.inWork(), with.keyIgnored(),
        with.inStep());
    h.append("<table><tr><th>receipt mailed</th><th>mails sent</th><th>events mailed twice or "
        + "more</th><th>events never mailed</th></tr>\n");
    for (int i = 0; i < labels.size(); i++) {
      DemoResult.Mails m = mails.get(i);
      h.append("<tr><td>").append(escape(labels.get(i))).append("</td><td>").append(m.sent())
          .append("</td><td class=\"").append(m.doubled() == 0 ? "good" : "bad").append("\">")
          .append(m.doubled()).append("</td><td>").append(m.never()).append("</td></tr>\n");
    }
    h.append("</table>\n<figure>");
    long[] values = mails.stream().mapToLong(DemoResult.Mails::doubled).toArray();
    h.append(bars(labels, values, new String[] {GREY, RED, RED, GREEN}));
    h.append("<figcaption>Events whose receipt was mailed more than once. 1 and 2 double on every "
        + "takeover of a crashed worker: the work runs again, and a key helps only a downstream "
        + "that deduplicates by it. 3 journals the step's start and result under the fencing "
        + "token; a takeover that finds it started searches the mailer by the step key, finds "
        + "the mail and does not send it again (").append(with.reconciled()).append(" times in "
        + "this run); one that finds its result journaled gets it back without sending (")
        .append(with.replayed()).append(").</figcaption></figure>\n");
  }

  /** A horizontal bar per label, its value at its end, with a scale of labelled ticks. */
  static String bars(List<String> labels, long[] values, String[] colours) {
    int labelWidth = 260;
    int barHeight = 26;
    int gap = 12;
    int height = TOP + labels.size() * (barHeight + gap) + BOTTOM - gap;
    long max = 1;
    for (long v : values) {
      max = Math.max(max, v);
    }
    Axis axis = Axis.of(max, true);
    double plotWidth = WIDTH - labelWidth - RIGHT - 40;
    StringBuilder svg = svgStart(height);
    int axisY = height - BOTTOM + 6;
    for (double tick : axis.ticks()) {
      double x = labelWidth + plotWidth * tick / axis.max();
      svg.append(line(x, TOP - 6, x, axisY, "#e0e0e0"));
      svg.append(text(x, axisY + 16, 11, "middle", GREY, Axis.format(tick)));
    }
    svg.append(text(labelWidth + plotWidth / 2, height - 6, 11, "middle", GREY,
        "events mailed twice or more"));
    for (int i = 0; i < labels.size(); i++) {
      double y = TOP + i * (barHeight + gap);
      double w = plotWidth * values[i] / axis.max();
      svg.append(text(labelWidth - 10, y + barHeight / 2.0 + 4, 13, "end", "#222",
          labels.get(i)));
      svg.append(String.format(Locale.ROOT,
          "<rect x=\"%d\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>",
          labelWidth, y, Math.max(w, 1.5), barHeight, colours[i]));
      svg.append(text(labelWidth + Math.max(w, 1.5) + 6, y + barHeight / 2.0 + 5, 13, "start",
          colours[i], Long.toString(values[i])));
    }
    svg.append(line(labelWidth, TOP - 6, labelWidth, axisY, "#888"));
    return svg.append("</svg>").toString();
  }

  private static String histogram(long[] counts) {
    int height = 260;
    long max = 1;
    int first = counts.length;
    int last = -1;
    for (int i = 0; i < counts.length; i++) {
      max = Math.max(max, counts[i]);
      if (counts[i] > 0) {
        first = Math.min(first, i);
        last = i;
      }
    }
    StringBuilder svg = svgStart(height);
    if (last < 0) {
      return svg.append("</svg>").toString();
    }
    Axis axis = Axis.of(max, true);
    double plotHeight = height - TOP - BOTTOM;
    double plotWidth = WIDTH - LEFT - RIGHT;
    yAxis(svg, axis, height, "deliveries");
    int n = last - first + 1;
    double barWidth = plotWidth / n;
    for (int i = first; i <= last; i++) {
      double barHeight = plotHeight * counts[i] / axis.max();
      double x = LEFT + (i - first) * barWidth;
      double y = height - BOTTOM - barHeight;
      svg.append(String.format(Locale.ROOT,
          "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\">"
              + "<title>%s to %s: %d</title></rect>",
          x + 1, y, Math.max(1, barWidth - 2), barHeight, BLUE, duration(BOUNDS[i]),
          duration(BOUNDS[i + 1]), counts[i]));
      svg.append(text(x, height - BOTTOM + 14, 10, "middle", GREY, duration(BOUNDS[i])));
    }
    svg.append(text(LEFT + n * barWidth, height - BOTTOM + 14, 10, "middle", GREY,
        last + 1 < BOUNDS.length - 1 ? duration(BOUNDS[last + 1]) : ""));
    svg.append(text(LEFT + plotWidth / 2, height - 6, 11, "middle", GREY,
        "time spent in Once per delivery (bucket lower bounds)"));
    return svg.append("</svg>").toString();
  }

  private static void throughputFigure(StringBuilder h, String name, DemoResult.Figures figures,
      String colour, String caption) {
    double seconds = figures.elapsed().toNanos() / 1e9;
    h.append("<figure><figcaption style=\"color:#222;font-size:14px;font-weight:600\">")
        .append(escape(name)).append(": ").append(figures.deliveries())
        .append(String.format(Locale.ROOT, " deliveries in %.2f s, %.0f/s on average",
            seconds, figures.throughput()))
        .append("</figcaption>")
        .append(throughput(figures.timeline(), figures.elapsed().toMillis(), colour,
            figures.throughput()))
        .append("<figcaption>").append(escape(caption)).append("</figcaption></figure>\n");
  }

  /**
   * One run's throughput: deliveries per second in display buckets merged from the
   * {@link Timeline} ones, so that a run of 0.2 s and one of a minute both get a readable line.
   */
  static String throughput(long[] timeline, long elapsedMillis, String colour, double mean) {
    int height = 220;
    long runMillis = Math.max(elapsedMillis, timeline.length * Timeline.BUCKET_MILLIS);
    runMillis = Math.max(runMillis, 1);
    long bucket = displayBucketMillis(runMillis);
    int points = (int) Math.max(1, (runMillis + bucket - 1) / bucket);
    double[] rates = new double[points];
    long[] counts = new long[points];
    for (int i = 0; i < timeline.length; i++) {
      int at = (int) Math.min(points - 1, i * Timeline.BUCKET_MILLIS / bucket);
      counts[at] += timeline[i];
    }
    double peak = 1;
    for (int i = 0; i < points; i++) {
      // The last bucket covers only the end of the run: its rate is over the time it covers.
      long covered = Math.min(bucket, runMillis - i * bucket);
      rates[i] = covered <= 0 ? 0 : counts[i] * 1000.0 / covered;
      peak = Math.max(peak, rates[i]);
    }
    Axis y = Axis.of(peak);
    Axis x = Axis.of(runMillis / 1000.0);
    double plotHeight = height - TOP - BOTTOM;
    double plotWidth = WIDTH - LEFT - RIGHT;
    StringBuilder svg = svgStart(height);
    yAxis(svg, y, height, "deliveries/s");
    for (double tick : x.ticks()) {
      double px = LEFT + plotWidth * tick / x.max();
      svg.append(line(px, height - BOTTOM, px, height - BOTTOM + 4, "#888"));
      svg.append(text(px, height - BOTTOM + 16, 11, "middle", GREY, Axis.format(tick) + " s"));
    }
    svg.append(text(LEFT + plotWidth / 2, height - 6, 11, "middle", GREY,
        "time since the run started (" + bucket + " ms steps)"));
    StringBuilder path = new StringBuilder();
    for (int i = 0; i < points; i++) {
      double t0 = i * bucket / 1000.0;
      double t1 = Math.min(runMillis, (i + 1) * bucket) / 1000.0;
      double py = height - BOTTOM - plotHeight * rates[i] / y.max();
      // A step per bucket: the rate held over the bucket's time.
      path.append(String.format(Locale.ROOT, "%s%.1f,%.1f L%.1f,%.1f ", i == 0 ? "M" : "L",
          LEFT + plotWidth * t0 / x.max(), py, LEFT + plotWidth * t1 / x.max(), py));
    }
    double endX = LEFT + plotWidth * (runMillis / 1000.0) / x.max();
    svg.append("<path d=\"").append(path).append(String.format(Locale.ROOT,
            "L%.1f,%d L%d,%d Z\" fill=\"%s\" fill-opacity=\"0.15\" stroke=\"none\"/>", endX,
            height - BOTTOM, LEFT, height - BOTTOM, colour));
    svg.append("<path d=\"").append(path.toString().strip()).append("\" fill=\"none\" stroke=\"")
        .append(colour).append("\" stroke-width=\"2\"/>");
    double meanY = height - BOTTOM - plotHeight * mean / y.max();
    svg.append(String.format(Locale.ROOT,
        "<line x1=\"%d\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
            + "stroke-dasharray=\"5 4\"/>", LEFT, meanY, endX, meanY, colour));
    svg.append(text(Math.min(endX, WIDTH - RIGHT) - 4, meanY - 5, 11, "end", colour,
        String.format(Locale.ROOT, "average %.0f/s", mean)));
    return svg.append("</svg>").toString();
  }

  /** The smallest display bucket that gives at most {@link #MAX_POINTS} points. */
  static long displayBucketMillis(long runMillis) {
    for (long b : DISPLAY_BUCKETS_MILLIS) {
      if (b >= Timeline.BUCKET_MILLIS && (runMillis + b - 1) / b <= MAX_POINTS) {
        return b;
      }
    }
    return DISPLAY_BUCKETS_MILLIS[DISPLAY_BUCKETS_MILLIS.length - 1];
  }

  /** Horizontal grid lines and labels at the axis's ticks, and the axis's title. */
  private static void yAxis(StringBuilder svg, Axis axis, int height, String title) {
    double plotHeight = height - TOP - BOTTOM;
    for (double tick : axis.ticks()) {
      double y = height - BOTTOM - plotHeight * tick / axis.max();
      svg.append(line(LEFT, y, WIDTH - RIGHT, y, tick == 0 ? "#888" : "#e0e0e0"));
      svg.append(text(LEFT - 6, y + 4, 11, "end", GREY, Axis.format(tick)));
    }
    svg.append(line(LEFT, TOP, LEFT, height - BOTTOM, "#888"));
    svg.append(text(LEFT, TOP - 12, 11, "start", GREY, title));
  }

  /**
   * A linear axis from 0: the smallest 1-2-5 step that reaches the data's maximum in at most
   * {@value #MAX_INTERVALS} intervals (so 4 to 8 of them, 5 to 9 labelled ticks), up to the first
   * tick at or above the maximum.
   */
  record Axis(double max, double step) {

    static final int MAX_INTERVALS = 8;

    static Axis of(double dataMax) {
      return of(dataMax, false);
    }

    /** As {@link #of(double)}; {@code whole}: the step is a whole number (counts). */
    static Axis of(double dataMax, boolean whole) {
      double top = dataMax > 0 && Double.isFinite(dataMax) ? dataMax : 1;
      double magnitude = Math.pow(10, Math.floor(Math.log10(top / MAX_INTERVALS)));
      for (double m = magnitude; ; m *= 10) {
        for (int factor : new int[] {1, 2, 5}) {
          double step = round(factor * m);
          if (step <= 0 || whole && step < 1) {
            continue;
          }
          long intervals = (long) Math.ceil(top / step - 1e-9);
          if (intervals <= MAX_INTERVALS) {
            return new Axis(round(Math.max(1, intervals) * step), step);
          }
        }
      }
    }

    List<Double> ticks() {
      List<Double> ticks = new ArrayList<>();
      int n = (int) Math.round(max / step);
      for (int i = 0; i <= n; i++) {
        ticks.add(round(i * step));
      }
      return ticks;
    }

    /** "0", "0.25", "40", "2.5k", "12k", "1.2M". */
    static String format(double value) {
      double abs = Math.abs(value);
      if (abs >= 1_000_000) {
        return plain(value / 1_000_000) + "M";
      }
      if (abs >= 1_000) {
        return plain(value / 1_000) + "k";
      }
      return plain(value);
    }

    private static String plain(double value) {
      return BigDecimal.valueOf(value).setScale(3, RoundingMode.HALF_UP).stripTrailingZeros()
          .toPlainString();
    }
  }

  private static double round(double value) {
    return BigDecimal.valueOf(value).setScale(6, RoundingMode.HALF_UP).doubleValue();
  }

  private static StringBuilder svgStart(int height) {
    return new StringBuilder(String.format(Locale.ROOT,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            + "viewBox=\"0 0 %d %d\" font-family=\"system-ui,sans-serif\">",
        WIDTH, height, WIDTH, height));
  }

  private static String line(double x1, double y1, double x2, double y2, String colour) {
    return String.format(Locale.ROOT,
        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>", x1, y1, x2, y2,
        colour);
  }

  private static String text(double x, double y, int size, String anchor, String colour,
      String text) {
    return String.format(Locale.ROOT,
        "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%d\" text-anchor=\"%s\" fill=\"%s\">%s</text>",
        x, y, size, anchor, colour, escape(text));
  }

  /** "10µs", "2ms", "1s". */
  static String duration(long nanos) {
    if (nanos >= 1_000_000_000L) {
      return nanos / 1_000_000_000L + "s";
    }
    if (nanos >= 1_000_000L) {
      return nanos / 1_000_000L + "ms";
    }
    return nanos / 1_000L + "\u00b5s";
  }

  private static long[] bounds() {
    long[] steps = {1, 2, 5};
    long[] out = new long[3 * 6 + 2];
    int i = 0;
    out[i++] = 0;
    for (long decade = 10_000L; decade < 10_000_000_000L; decade *= 10) {
      for (long step : steps) {
        out[i++] = decade * step;
      }
    }
    out[i] = Long.MAX_VALUE;
    return out;
  }

  static String escape(String s) {
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        .replace("\"", "&quot;");
  }
}
