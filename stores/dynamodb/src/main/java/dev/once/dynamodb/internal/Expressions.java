package dev.once.dynamodb.internal;

import java.util.EnumMap;
import java.util.HashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;

/**
 * Expressions as DynamoDB receives them. The source writes them readably, with placeholders named
 * after what they hold ({@code #status = :in_progress}); every request carries its expressions,
 * one entry per attribute placeholder (placeholder and attribute name) and one per value, so they
 * are sent with one-letter placeholders and without optional spaces ({@code #s=:i}). Only the
 * requests change: attribute names, and so the stored items, stay as configured.
 */
public final class Expressions {

  /** Each attribute's placeholder letter. */
  private static final Map<Attribute, String> ATTRIBUTES = new EnumMap<>(Map.ofEntries(
      Map.entry(Attribute.KEY, "#i"),
      Map.entry(Attribute.STATUS, "#s"),
      Map.entry(Attribute.FINGERPRINT, "#f"),
      Map.entry(Attribute.TOKEN, "#t"),
      Map.entry(Attribute.LEASE_UNTIL, "#l"),
      Map.entry(Attribute.ATTEMPTS, "#a"),
      Map.entry(Attribute.CLAIM_ID, "#c"),
      Map.entry(Attribute.CHECKPOINT_NAME, "#p"),
      Map.entry(Attribute.CHECKPOINT_DATA, "#d"),
      Map.entry(Attribute.OUTCOME_KIND, "#o"),
      Map.entry(Attribute.OUTCOME_MEDIA_TYPE, "#m"),
      Map.entry(Attribute.OUTCOME_BODY, "#b"),
      Map.entry(Attribute.LAST_ERROR, "#r"),
      Map.entry(Attribute.CREATED_AT, "#g"),
      Map.entry(Attribute.UPDATED_AT, "#u"),
      Map.entry(Attribute.EXPIRES_AT, "#e"),
      Map.entry(Attribute.TTL, "#x")));

  /** Each value placeholder's letter, by its readable name. */
  private static final Map<String, String> VALUES = Map.ofEntries(
      Map.entry(":now", ":n"),
      Map.entry(":in_progress", ":i"),
      Map.entry(":completed", ":d"),
      Map.entry(":failed", ":q"),
      Map.entry(":fingerprint", ":f"),
      Map.entry(":token", ":t"),
      Map.entry(":old_token", ":p"),
      Map.entry(":token_base", ":z"),
      Map.entry(":one", ":o"),
      Map.entry(":attempts", ":a"),
      Map.entry(":claim_id", ":c"),
      Map.entry(":lease_until", ":l"),
      Map.entry(":expires_at", ":e"),
      Map.entry(":ttl", ":x"),
      Map.entry(":kind", ":k"),
      Map.entry(":media_type", ":m"),
      Map.entry(":body", ":b"),
      Map.entry(":error", ":r"),
      Map.entry(":name", ":g"),
      Map.entry(":data", ":v"));

  private static final Map<String, Attribute> BY_READABLE = new HashMap<>();

  static {
    for (Attribute a : Attribute.values()) {
      BY_READABLE.put(AttributeNames.placeholder(a), a);
    }
    if (Map.copyOf(invert(ATTRIBUTES)).size() != Attribute.values().length
        || VALUES.values().stream().distinct().count() != VALUES.size()) {
      throw new AssertionError("placeholder letters must be distinct");
    }
  }

  private static final Pattern PLACEHOLDER = Pattern.compile("[#:][a-z_]+");
  /** Spaces DynamoDB's grammar does not need: around comparisons, commas and plus signs. */
  private static final Pattern OPTIONAL_SPACES = Pattern.compile("\\s*([=<>,+]+)\\s*");

  private Expressions() {}

  /** An expression as sent: its placeholders by their letters, without optional spaces. */
  public static String compact(String readable) {
    Matcher m = PLACEHOLDER.matcher(readable);
    StringBuilder out = new StringBuilder();
    while (m.find()) {
      String p = m.group();
      m.appendReplacement(out, Matcher.quoteReplacement(p.charAt(0) == '#'
          ? ATTRIBUTES.get(attribute(p, readable)) : value(p)));
    }
    m.appendTail(out);
    return OPTIONAL_SPACES.matcher(out).replaceAll("$1");
  }

  /** The placeholder sent for the readable value placeholder {@code readable}, e.g. {@code :now}. */
  public static String value(String readable) {
    String letter = VALUES.get(readable);
    if (letter == null) {
      throw new IllegalStateException("no placeholder letter for " + readable);
    }
    return letter;
  }

  /**
   * The ExpressionAttributeNames of the readable {@code expressions}: each attribute placeholder
   * they use, by its letter, with the attribute's configured name.
   */
  static Map<String, String> names(AttributeNames names, String... expressions) {
    Map<String, String> used = new HashMap<>();
    for (String expression : expressions) {
      Matcher m = PLACEHOLDER.matcher(expression);
      while (m.find()) {
        if (m.group().charAt(0) == '#') {
          Attribute a = attribute(m.group(), expression);
          used.put(ATTRIBUTES.get(a), names.get(a));
        }
      }
    }
    return Map.copyOf(used);
  }

  private static Attribute attribute(String placeholder, String expression) {
    Attribute a = BY_READABLE.get(placeholder);
    if (a == null) {
      throw new IllegalStateException("unknown placeholder " + placeholder + " in " + expression);
    }
    return a;
  }

  private static Map<String, Attribute> invert(Map<Attribute, String> map) {
    Map<String, Attribute> inverted = new HashMap<>();
    map.forEach((k, v) -> inverted.put(v, k));
    return inverted;
  }

  /** Expression attribute values under their letters, put by their readable names. */
  static final class Values {
    private final Map<String, AttributeValue> values = new HashMap<>();

    Values put(String readable, AttributeValue value) {
      values.put(value(readable), value);
      return this;
    }

    Map<String, AttributeValue> map() {
      return values;
    }
  }

  /**
   * A write's condition and update (either may be null), compacted, with the attribute names they
   * use: built once per store.
   */
  record Statement(String condition, String update, Map<String, String> names) {

    static Statement of(AttributeNames names, String condition, String update) {
      return new Statement(condition == null ? null : compact(condition),
          update == null ? null : compact(update),
          Expressions.names(names, condition == null ? "" : condition,
              update == null ? "" : update));
    }
  }
}
