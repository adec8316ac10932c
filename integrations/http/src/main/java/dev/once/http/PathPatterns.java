package dev.once.http;

import java.util.List;
import java.util.Objects;

/**
 * Path patterns over the path within the application ({@code /payments/42}): {@code *} matches
 * within one segment, a {@code **} segment matches any number of segments (also none). Anything
 * else matches itself.
 */
public final class PathPatterns {

  private final List<String[]> patterns;
  private final List<String> sources;

  private PathPatterns(List<String> sources) {
    this.sources = List.copyOf(sources);
    this.patterns = this.sources.stream().map(PathPatterns::segments).toList();
  }

  /**
   * Compiles patterns.
   *
   * @throws IllegalArgumentException if a pattern does not start with {@code /} or uses {@code **}
   *                                  inside a segment
   */
  public static PathPatterns of(List<String> patterns) {
    for (String pattern : patterns) {
      validate(pattern);
    }
    return new PathPatterns(patterns);
  }

  /** Throws if {@code pattern} is not a valid pattern. */
  public static void validate(String pattern) {
    Objects.requireNonNull(pattern, "path pattern");
    if (!pattern.startsWith("/")) {
      throw new IllegalArgumentException("path pattern must start with '/': " + pattern);
    }
    for (String segment : segments(pattern)) {
      if (segment.contains("**") && !segment.equals("**")) {
        throw new IllegalArgumentException(
            "'**' must be a whole segment (as in /a/**/b), not part of one: " + pattern);
      }
    }
  }

  /** The patterns as given. */
  public List<String> sources() {
    return sources;
  }

  /** Whether any pattern matches {@code path}. */
  public boolean matches(String path) {
    String[] segments = segments(path);
    for (String[] pattern : patterns) {
      if (match(pattern, 0, segments, 0)) {
        return true;
      }
    }
    return false;
  }

  private static boolean match(String[] pattern, int p, String[] path, int s) {
    while (p < pattern.length) {
      if (pattern[p].equals("**")) {
        for (int skip = s; skip <= path.length; skip++) {
          if (match(pattern, p + 1, path, skip)) {
            return true;
          }
        }
        return false;
      }
      if (s == path.length || !glob(pattern[p], path[s])) {
        return false;
      }
      p++;
      s++;
    }
    return s == path.length;
  }

  /** {@code *} matches any run of characters within one segment. */
  private static boolean glob(String pattern, String text) {
    int star = pattern.indexOf('*');
    if (star < 0) {
      return pattern.equals(text);
    }
    String head = pattern.substring(0, star);
    if (!text.startsWith(head)) {
      return false;
    }
    String rest = pattern.substring(star + 1);
    for (int i = head.length(); i <= text.length(); i++) {
      if (glob(rest, text.substring(i))) {
        return true;
      }
    }
    return false;
  }

  private static String[] segments(String path) {
    // "/a//b/" has the segments a, b: empty segments never carry meaning in a route.
    return java.util.Arrays.stream(path.split("/")).filter(s -> !s.isEmpty())
        .toArray(String[]::new);
  }
}
