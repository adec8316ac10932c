package dev.once.cli.chaos;

import java.time.Duration;
import java.util.Locale;
import java.util.Random;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The times of {@code once chaos}'s options: a duration ({@code 3m}, {@code 30s}, {@code 500ms},
 * {@code 1.5s}, {@code 1h}) and an interval between faults, a duration or a range of them
 * ({@code 1s-3s}, {@code 1-3s}), or {@code off}.
 */
final class ChaosTime {

  private static final Pattern DURATION =
      Pattern.compile("(\\d+(?:\\.\\d+)?)\\s*(ms|s|m|h)");
  private static final Pattern RANGE =
      Pattern.compile("(\\d+(?:\\.\\d+)?)\\s*(ms|s|m|h)?\\s*-\\s*(\\d+(?:\\.\\d+)?)\\s*(ms|s|m|h)");

  private ChaosTime() {}

  /** An interval between faults: the next one comes after a uniformly random time in it. */
  record Range(Duration min, Duration max) {

    Duration next(Random random) {
      long span = max.toMillis() - min.toMillis();
      return min.plusMillis(span <= 0 ? 0 : (long) (random.nextDouble() * (span + 1)));
    }

    @Override
    public String toString() {
      return min.equals(max) ? format(min) : format(min) + "-" + format(max);
    }
  }

  /**
   * Parses a duration.
   *
   * @throws IllegalArgumentException with a one-line message naming {@code option}
   */
  static Duration duration(String option, String text) {
    Matcher m = DURATION.matcher(text == null ? "" : text.strip().toLowerCase(Locale.ROOT));
    if (!m.matches()) {
      throw new IllegalArgumentException(option + " must be a time like 3m, 30s or 500ms, was "
          + text);
    }
    return of(m.group(1), m.group(2));
  }

  /**
   * Parses an interval: {@code off} (null), one duration or a range {@code MIN-MAX}.
   *
   * @throws IllegalArgumentException with a one-line message naming {@code option}
   */
  static Range range(String option, String text) {
    String t = text == null ? "" : text.strip().toLowerCase(Locale.ROOT);
    if (t.equals("off") || t.equals("0")) {
      return null;
    }
    Matcher r = RANGE.matcher(t);
    if (r.matches()) {
      String unit = r.group(4);
      Duration min = of(r.group(1), r.group(2) == null ? unit : r.group(2));
      Duration max = of(r.group(3), unit);
      if (min.compareTo(max) > 0) {
        throw new IllegalArgumentException(option + ": the range " + text + " ends before it "
            + "starts");
      }
      return new Range(min, max);
    }
    Matcher d = DURATION.matcher(t);
    if (d.matches()) {
      Duration one = of(d.group(1), d.group(2));
      return new Range(one, one);
    }
    throw new IllegalArgumentException(option + " must be a time or a range like 1s-3s, or off, "
        + "was " + text);
  }

  private static Duration of(String number, String unit) {
    double value = Double.parseDouble(number);
    double millis = switch (unit) {
      case "ms" -> value;
      case "s" -> value * 1_000;
      case "m" -> value * 60_000;
      default -> value * 3_600_000;
    };
    if (millis > Duration.ofDays(1).toMillis()) {
      return Duration.ofDays(1); // callers bound it further with their own message
    }
    return Duration.ofMillis(Math.round(millis));
  }

  /** {@code 3m}, {@code 30s}, {@code 2.5s}, {@code 500ms}: the shortest exact form. */
  static String format(Duration d) {
    long ms = d.toMillis();
    if (ms != 0 && ms % 60_000 == 0) {
      return ms / 60_000 + "m";
    }
    if (ms % 1_000 == 0) {
      return ms / 1_000 + "s";
    }
    if (ms >= 1_000 && ms % 100 == 0) {
      return String.format(Locale.ROOT, "%.1fs", ms / 1_000.0);
    }
    return ms + "ms";
  }
}
