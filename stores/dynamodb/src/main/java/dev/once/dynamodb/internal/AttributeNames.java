package dev.once.dynamodb.internal;

import dev.once.dynamodb.RecordAttribute;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The configured name of each {@link RecordAttribute}, and the placeholders expressions use for
 * them ({@code #status}, {@code #lease_until}: the attribute's enum name in lower case). Every
 * expression goes through placeholders, so configured names may be reserved words such as
 * {@code status} or {@code ttl}.
 */
public final class AttributeNames {

  private static final Pattern PLACEHOLDER = Pattern.compile("#[a-z_]+");
  private static final Map<String, RecordAttribute> BY_PLACEHOLDER = new HashMap<>();

  static {
    for (RecordAttribute a : RecordAttribute.values()) {
      BY_PLACEHOLDER.put(placeholder(a), a);
    }
  }

  private final EnumMap<RecordAttribute, String> names;

  private AttributeNames(EnumMap<RecordAttribute, String> names) {
    this.names = names;
  }

  /** The defaults overridden by {@code overrides}; checks that every name is valid and distinct. */
  public static AttributeNames of(Map<RecordAttribute, String> overrides) {
    EnumMap<RecordAttribute, String> names = new EnumMap<>(RecordAttribute.class);
    Map<String, RecordAttribute> seen = new HashMap<>();
    for (RecordAttribute a : RecordAttribute.values()) {
      String name = overrides.getOrDefault(a, a.defaultName());
      RecordAttribute clash = seen.put(name, a);
      if (clash != null) {
        throw new IllegalArgumentException("attributes " + clash + " and " + a
            + " would both be named '" + name + "'");
      }
      names.put(a, name);
    }
    return new AttributeNames(names);
  }

  /** Checks one attribute name: 1–255 characters (DynamoDB's limit for key attributes). */
  public static String check(RecordAttribute attribute, String name) {
    Objects.requireNonNull(attribute, "attribute");
    Objects.requireNonNull(name, "attribute name");
    if (name.isEmpty() || name.length() > 255) {
      throw new IllegalArgumentException("the name of " + attribute
          + " must be 1–255 characters, was " + name.length());
    }
    return name;
  }

  /** The placeholder of an attribute, such as {@code #lease_until}. */
  public static String placeholder(RecordAttribute attribute) {
    return "#" + attribute.name().toLowerCase(Locale.ROOT);
  }

  /** The configured name of {@code attribute}. */
  public String get(RecordAttribute attribute) {
    return names.get(attribute);
  }

  /** The ExpressionAttributeNames for the placeholders used in {@code expressions} (only those). */
  public Map<String, String> forExpressions(String... expressions) {
    Map<String, String> used = new HashMap<>();
    for (String expression : expressions) {
      if (expression == null) {
        continue;
      }
      Matcher m = PLACEHOLDER.matcher(expression);
      while (m.find()) {
        RecordAttribute a = BY_PLACEHOLDER.get(m.group());
        if (a == null) {
          throw new IllegalStateException("unknown placeholder " + m.group() + " in " + expression);
        }
        used.put(m.group(), names.get(a));
      }
    }
    return used;
  }

  @Override
  public String toString() {
    return names.toString();
  }
}
