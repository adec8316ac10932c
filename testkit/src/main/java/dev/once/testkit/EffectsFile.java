package dev.once.testkit;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * Side effects recorded in a file, one line each, so that several processes (a worker killed or
 * stopped, and the one after it) add to one record the test then counts. Each line is written
 * with {@code SYNC}: an effect recorded before a process dies is in the file.
 */
public final class EffectsFile {

  private EffectsFile() {}

  /** Records one effect. */
  public static synchronized void append(Path file, String effect) {
    try {
      Files.writeString(file, effect + "\n", StandardCharsets.UTF_8, StandardOpenOption.CREATE,
          StandardOpenOption.APPEND, StandardOpenOption.SYNC);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The effects recorded, in the order they were (empty when the file does not exist yet). */
  public static List<String> lines(Path file) {
    try {
      if (!Files.exists(file)) {
        return List.of();
      }
      return Files.readAllLines(file, StandardCharsets.UTF_8).stream()
          .filter(line -> !line.isEmpty()).toList();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** How many times each effect was recorded. */
  public static Map<String, Long> counts(Path file) {
    return lines(file).stream()
        .collect(Collectors.groupingBy(Function.identity(), Collectors.counting()));
  }
}
