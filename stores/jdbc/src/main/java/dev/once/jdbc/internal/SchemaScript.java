package dev.once.jdbc.internal;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/** Loads a versioned DDL resource, substitutes the table name and splits it into statements. */
public final class SchemaScript {

  private SchemaScript() {}

  /**
   * The DDL text of {@code resource} for {@code table}, comments kept but the one explaining the
   * placeholders, which reads as nonsense once they are replaced.
   */
  public static String text(String resource, TableName table) {
    try (InputStream in = SchemaScript.class.getClassLoader().getResourceAsStream(resource)) {
      if (in == null) {
        throw new IllegalStateException("schema resource " + resource + " is missing from the jar");
      }
      String text = new String(in.readAllBytes(), StandardCharsets.UTF_8)
          .replaceAll("(?m)^--[^\\n]*\\$\\{table\\} is replaced[^\\n]*\\n", "");
      return text.replace("${table}", table.qualified()).replace("${name}", table.name());
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read schema resource " + resource, e);
    }
  }

  /**
   * The statements of a script: {@code --} comment lines dropped, split at a {@code ;} that ends a
   * line outside a {@code $$}-quoted body (a PostgreSQL {@code DO} block is one statement). The
   * scripts are ours: no semicolons inside literals, no other dollar quotes.
   */
  public static List<String> statements(String script) {
    List<String> statements = new ArrayList<>();
    StringBuilder current = new StringBuilder();
    boolean inBody = false;
    for (String line : script.split("\n")) {
      String trimmed = line.strip();
      if (trimmed.isEmpty() || trimmed.startsWith("--")) {
        continue;
      }
      for (int i = trimmed.indexOf("$$"); i >= 0; i = trimmed.indexOf("$$", i + 2)) {
        inBody = !inBody;
      }
      if (!inBody && trimmed.endsWith(";")) {
        current.append(trimmed, 0, trimmed.length() - 1);
        statements.add(current.toString().strip());
        current.setLength(0);
      } else {
        current.append(line).append('\n');
      }
    }
    if (!current.toString().isBlank()) {
      statements.add(current.toString().strip());
    }
    return statements;
  }
}
