package dev.once.jdbc.internal;

import java.util.Objects;
import java.util.regex.Pattern;

/**
 * A validated table name: an unquoted SQL identifier, optionally qualified by one schema
 * ({@code schema.table}). The name is spliced into SQL text, so nothing but letters, digits and
 * underscores passes. The table part is at most 40 characters so that derived index names
 * ({@code <table>_expires_idx}) stay under PostgreSQL's 63-character limit, where truncation would
 * silently make two index names collide.
 *
 * @param qualified the name as written in SQL ({@code schema.table} or {@code table})
 * @param name      the unqualified table part, used to derive index names
 */
public record TableName(String qualified, String name) {

  private static final String PART = "[A-Za-z_][A-Za-z0-9_]{0,39}";
  private static final Pattern VALID = Pattern.compile("(" + PART + "\\.)?" + PART);

  /** Validates {@code table}; throws IllegalArgumentException with the reason. */
  public static TableName of(String table) {
    Objects.requireNonNull(table, "table");
    if (!VALID.matcher(table).matches()) {
      throw new IllegalArgumentException("invalid table name '" + table + "': use an unquoted SQL"
          + " identifier ([A-Za-z_][A-Za-z0-9_]*, at most 40 characters), optionally qualified as"
          + " schema.table");
    }
    int dot = table.indexOf('.');
    return new TableName(table, dot < 0 ? table : table.substring(dot + 1));
  }

  /** Whether a schema is named. */
  public boolean isQualified() {
    return !qualified.equals(name);
  }

  @Override
  public String toString() {
    return qualified;
  }
}
