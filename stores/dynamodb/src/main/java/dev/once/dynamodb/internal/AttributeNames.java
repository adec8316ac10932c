package dev.once.dynamodb.internal;

import java.util.EnumMap;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

/**
 * The configured name of each {@link Attribute}, and the readable placeholders the source's
 * expressions use for them ({@code #status}, {@code #lease_until}: the attribute's enum name in
 * lower case; {@link Expressions} sends them as one letter). Every expression goes through
 * placeholders, so configured names may be reserved words such as {@code status} or {@code ttl}.
 */
public final class AttributeNames {

  private final EnumMap<Attribute, String> names;

  private AttributeNames(EnumMap<Attribute, String> names) {
    this.names = names;
  }

  /** The defaults overridden by {@code overrides}; checks that every name is valid and distinct. */
  public static AttributeNames of(Map<Attribute, String> overrides) {
    EnumMap<Attribute, String> names = new EnumMap<>(Attribute.class);
    Map<String, Attribute> seen = new HashMap<>();
    for (Attribute a : Attribute.values()) {
      String name = overrides.getOrDefault(a, a.defaultName());
      Attribute clash = seen.put(name, a);
      if (clash != null) {
        throw new IllegalArgumentException("attributes " + clash + " and " + a
            + " would both be named '" + name + "'");
      }
      names.put(a, name);
    }
    return new AttributeNames(names);
  }

  /** Checks one attribute name: 1–255 characters (DynamoDB's limit for key attributes). */
  public static String check(Attribute attribute, String name) {
    Objects.requireNonNull(attribute, "attribute");
    Objects.requireNonNull(name, "attribute name");
    if (name.isEmpty() || name.length() > 255) {
      throw new IllegalArgumentException("the name of " + attribute
          + " must be 1–255 characters, was " + name.length());
    }
    return name;
  }

  /** The readable placeholder of an attribute, such as {@code #lease_until}. */
  public static String placeholder(Attribute attribute) {
    return "#" + attribute.name().toLowerCase(Locale.ROOT);
  }

  /** The configured name of {@code attribute}. */
  public String get(Attribute attribute) {
    return names.get(attribute);
  }

  @Override
  public String toString() {
    return names.toString();
  }
}
