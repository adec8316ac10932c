package dev.once.http;

/**
 * The RFC 9457 {@code application/problem+json} body of an {@link IdempotencyProblem}, as every
 * Once HTTP adapter writes it: {@code type}, {@code title}, {@code status}, {@code detail} and
 * {@code instance} (the request's path, as Spring answers a {@code ProblemDetail}).
 */
public final class ProblemJson {

  private ProblemJson() {}

  /**
   * The JSON body of {@code problem} answered with {@code status} (usually
   * {@link IdempotencyProblem#status()}; the original's for a replay of
   * {@link IdempotencyProblem#RESPONSE_NOT_STORED}).
   *
   * @param instance the request's path, its URI without the query
   */
  public static String of(IdempotencyProblem problem, int status, String detail,
      String instance) {
    return "{\"type\":" + quote(problem.type())
        + ",\"title\":" + quote(problem.title())
        + ",\"status\":" + status
        + ",\"detail\":" + quote(detail)
        + ",\"instance\":" + quote(instance) + "}";
  }

  private static String quote(String text) {
    StringBuilder out = new StringBuilder(text.length() + 2).append('"');
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      switch (c) {
        case '"' -> out.append("\\\"");
        case '\\' -> out.append("\\\\");
        case '\n' -> out.append("\\n");
        case '\r' -> out.append("\\r");
        case '\t' -> out.append("\\t");
        default -> {
          if (c < 0x20) {
            out.append(String.format("\\u%04x", (int) c));
          } else {
            out.append(c);
          }
        }
      }
    }
    return out.append('"').toString();
  }
}
