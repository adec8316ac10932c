package dev.once.cli;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;

/**
 * The HTML report of {@code once demo}: the audit table, a histogram of the latency Once added and
 * the throughput of both runs over time. One self-contained file (inline SVG, no script, nothing
 * fetched), so it opens from disk in any browser and can be attached to a ticket.
 */
final class DemoReport {

  /** Histogram bucket bounds in nanoseconds: 1-2-5 steps from 10 µs to 10 s. */
  static final long[] BOUNDS = bounds();

  private static final int WIDTH = 720;
  private static final int HEIGHT = 240;
  private static final int PAD = 48;

  private DemoReport() {}

  /** One row of the audit table: label, without Once ("-" when it has no meaning), with Once. */
  record Row(String label, String without, String with) {}

  static void write(Path file, String title, String settings, List<Row> rows, DemoResult result)
      throws IOException {
    Path parent = file.toAbsolutePath().getParent();
    if (parent != null) {
      Files.createDirectories(parent);
    }
    Files.writeString(file, html(title, settings, rows, result), StandardCharsets.UTF_8);
  }

  static String html(String title, String settings, List<Row> rows, DemoResult result) {
    StringBuilder h = new StringBuilder(16_384);
    h.append("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">")
        .append("<title>").append(escape(title)).append("</title><style>")
        .append("body{font:15px/1.45 system-ui,sans-serif;max-width:800px;margin:2em auto;")
        .append("padding:0 1em;color:#222}table{border-collapse:collapse;margin:1em 0}")
        .append("td,th{padding:.25em .8em;border-bottom:1px solid #ddd;text-align:right}")
        .append("td:first-child,th:first-child{text-align:left}.bad{color:#b00020;font-weight:600}")
        .append(".good{color:#0a7d32;font-weight:600}svg{background:#fafafa;border:1px solid #eee}")
        .append("figcaption{color:#555;font-size:13px}</style></head><body>\n");
    h.append("<h1>").append(escape(title)).append("</h1>\n<p>").append(escape(settings))
        .append("</p>\n");
    DemoResult.Figures with = result.withOnce();
    DemoResult.Figures without = result.withoutOnce();
    h.append("<p class=\"").append(result.onceHeld() ? "good" : "bad").append("\">With Once: ")
        .append(with.doubleCharges()).append(" double charges and ").append(with.lostEvents())
        .append(" lost events. Without: ").append(without.doubleCharges())
        .append(" double charges.</p>\n");
    h.append("<table><tr><th></th><th>without Once</th><th>with Once</th></tr>\n");
    for (Row row : rows) {
      h.append("<tr><td>").append(escape(row.label())).append("</td><td>")
          .append(escape(row.without())).append("</td><td>").append(escape(row.with()))
          .append("</td></tr>\n");
    }
    h.append("</table>\n");
    if (with.addedLatency() != null && with.addedLatency().count() > 0) {
      h.append("<h2>Latency Once added per delivery</h2>\n<figure>")
          .append(histogram(with.addedLatency().histogram(BOUNDS)))
          .append("<figcaption>Deliveries by time spent in Once (claim, and completion or replay), "
              + "the charge itself excluded; log-scale buckets.</figcaption></figure>\n");
    }
    h.append("<h2>Throughput over time</h2>\n<figure>")
        .append(timeline(without.timeline(), with.timeline()))
        .append("<figcaption>Deliveries handled per second, in ").append(Timeline.BUCKET_MILLIS)
        .append(" ms steps: <span style=\"color:#999\">without Once</span>, "
            + "<span style=\"color:#1565c0\">with Once</span> (dips with Once are crashed "
            + "workers' leases running out before a takeover).</figcaption></figure>\n");
    h.append("</body></html>\n");
    return h.toString();
  }

  private static String histogram(long[] counts) {
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
    StringBuilder svg = svgStart();
    if (last < 0) {
      return svg.append("</svg>").toString();
    }
    int n = last - first + 1;
    double barWidth = (WIDTH - 2.0 * PAD) / n;
    for (int i = first; i <= last; i++) {
      double height = (HEIGHT - 2.0 * PAD) * counts[i] / max;
      double x = PAD + (i - first) * barWidth;
      double y = HEIGHT - PAD - height;
      svg.append(String.format(Locale.ROOT,
          "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#1565c0\">"
              + "<title>%s to %s: %d</title></rect>",
          x + 1, y, barWidth - 2, height, duration(BOUNDS[i]), duration(BOUNDS[i + 1]),
          counts[i]));
      svg.append(String.format(Locale.ROOT,
          "<text x=\"%.1f\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\">%s</text>",
          x + barWidth / 2, HEIGHT - PAD + 14, duration(BOUNDS[i])));
    }
    svg.append(String.format(Locale.ROOT,
        "<text x=\"%d\" y=\"%d\" font-size=\"11\">%d deliveries</text>", PAD, PAD - 8, max));
    return svg.append("</svg>").toString();
  }

  private static String timeline(long[] without, long[] with) {
    int n = Math.max(2, Math.max(without.length, with.length));
    long max = 1;
    for (long c : without) {
      max = Math.max(max, c);
    }
    for (long c : with) {
      max = Math.max(max, c);
    }
    StringBuilder svg = svgStart();
    svg.append(polyline(without, n, max, "#999"));
    svg.append(polyline(with, n, max, "#1565c0"));
    long perSecond = max * 1000 / Timeline.BUCKET_MILLIS;
    svg.append(String.format(Locale.ROOT,
        "<text x=\"%d\" y=\"%d\" font-size=\"11\">%d/s</text>", PAD, PAD - 8, perSecond));
    svg.append(String.format(Locale.ROOT,
        "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"end\">%.1f s</text>",
        WIDTH - PAD, HEIGHT - PAD + 14, (n - 1) * Timeline.BUCKET_MILLIS / 1000.0));
    svg.append(String.format(Locale.ROOT,
        "<text x=\"%d\" y=\"%d\" font-size=\"11\">0 s</text>", PAD, HEIGHT - PAD + 14));
    return svg.append("</svg>").toString();
  }

  private static String polyline(long[] counts, int n, long max, String colour) {
    StringBuilder points = new StringBuilder();
    for (int i = 0; i < counts.length; i++) {
      double x = PAD + (WIDTH - 2.0 * PAD) * i / (n - 1);
      double y = HEIGHT - PAD - (HEIGHT - 2.0 * PAD) * counts[i] / max;
      points.append(String.format(Locale.ROOT, "%.1f,%.1f ", x, y));
    }
    return "<polyline fill=\"none\" stroke=\"" + colour + "\" stroke-width=\"2\" points=\""
        + points.toString().strip() + "\"/>";
  }

  private static StringBuilder svgStart() {
    return new StringBuilder(String.format(Locale.ROOT,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">"
            + "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#888\"/>",
        WIDTH, HEIGHT, WIDTH, HEIGHT, PAD, HEIGHT - PAD, WIDTH - PAD, HEIGHT - PAD));
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
