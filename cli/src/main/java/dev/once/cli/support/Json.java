package dev.once.cli.support;

import com.fasterxml.jackson.core.io.JsonStringEncoder;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Just enough JSON output for {@code --json} flags: objects keep insertion order, numbers print as
 * given (doubles with three decimals), strings are escaped by Jackson's encoder.
 */
public final class Json {

  private Json() {}

  /** An object whose fields print in the order they were put. */
  public static final class Obj {
    private final Map<String, Object> fields = new LinkedHashMap<>();

    /** Adds (or replaces) field {@code name}; returns this object. */
    public Obj put(String name, Object value) {
      fields.put(name, value);
      return this;
    }

    @Override
    public String toString() {
      StringBuilder out = new StringBuilder();
      write(out, this);
      return out.toString();
    }
  }

  /** A new, empty object. */
  public static Obj obj() {
    return new Obj();
  }

  /** {@code values} as a JSON array. */
  static String array(List<?> values) {
    StringBuilder out = new StringBuilder();
    write(out, values);
    return out.toString();
  }

  private static void write(StringBuilder out, Object value) {
    if (value == null) {
      out.append("null");
    } else if (value instanceof Obj obj) {
      out.append('{');
      String sep = "";
      for (Map.Entry<String, Object> field : obj.fields.entrySet()) {
        out.append(sep);
        string(out, field.getKey());
        out.append(':');
        write(out, field.getValue());
        sep = ",";
      }
      out.append('}');
    } else if (value instanceof List<?> list) {
      out.append('[');
      String sep = "";
      for (Object item : new ArrayList<>(list)) {
        out.append(sep);
        write(out, item);
        sep = ",";
      }
      out.append(']');
    } else if (value instanceof Double || value instanceof Float) {
      double d = ((Number) value).doubleValue();
      // JSON has no NaN or infinity.
      out.append(Double.isFinite(d) ? String.format(Locale.ROOT, "%.3f", d) : "null");
    } else if (value instanceof Number || value instanceof Boolean) {
      out.append(value);
    } else {
      string(out, value.toString());
    }
  }

  private static void string(StringBuilder out, String s) {
    out.append('"');
    // Jackson's encoder: the escaping rules of RFC 8259 in one place (once-jackson is on the path).
    JsonStringEncoder.getInstance().quoteAsString(s, out);
    out.append('"');
  }
}
