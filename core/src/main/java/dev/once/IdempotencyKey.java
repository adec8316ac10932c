package dev.once;

import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Objects;

/**
 * The identity of one idempotent operation: {@code scope} names the operation or consumer
 * ({@code payments.charge}, {@code orders-consumer}), {@code tenant} the caller ("" when
 * single-tenant) and {@code key} the client-supplied or derived value.
 *
 * <p>Two keys are the same record only when all three parts are equal, so two tenants never share
 * a record. Every part is validated when the key is made; an invalid part throws
 * {@link InvalidKeyException} before anything reaches a store.
 *
 * <ul>
 *   <li>{@code key}: 1–{@value #MAX_KEY_LENGTH} printable ASCII characters (space allowed), not blank.
 *   <li>{@code scope}: 1–{@value #MAX_SCOPE_LENGTH} visible ASCII characters (no space).
 *   <li>{@code tenant}: 0–{@value #MAX_TENANT_LENGTH} visible ASCII characters (no space).
 * </ul>
 */
public record IdempotencyKey(String scope, String tenant, String key) {

  /** Longest accepted {@code key}, as in the IETF Idempotency-Key draft and Stripe. */
  public static final int MAX_KEY_LENGTH = 255;
  /** Longest accepted {@code scope}. */
  public static final int MAX_SCOPE_LENGTH = 128;
  /** Longest accepted {@code tenant}. */
  public static final int MAX_TENANT_LENGTH = 128;

  public IdempotencyKey {
    check("scope", scope, 1, MAX_SCOPE_LENGTH, false);
    check("tenant", tenant, 0, MAX_TENANT_LENGTH, false);
    check("key", key, 1, MAX_KEY_LENGTH, true);
    if (key.isBlank()) {
      throw new InvalidKeyException("key must not be blank");
    }
  }

  /** A key in a single-tenant scope. */
  public static IdempotencyKey of(String scope, String key) {
    return new IdempotencyKey(scope, "", key);
  }

  /** A key of one tenant in a scope. */
  public static IdempotencyKey of(String scope, String tenant, String key) {
    return new IdempotencyKey(scope, tenant, key);
  }

  /**
   * A stable key to pass downstream (a payment gateway's idempotency key, a message id), so that a
   * side effect repeated by a takeover is deduplicated there: {@code once-} followed by 43
   * URL-safe base64 characters of SHA-256(scope NUL tenant NUL key), 48 in all. Fits any key
   * alphabet and length limit, and never reveals the tenant or the key.
   */
  public String downstreamKey() {
    return downstream(null);
  }

  /** As {@link #downstreamKey()}, for one named step of a multi-step operation. */
  public String downstreamKey(String step) {
    return downstream(Objects.requireNonNull(step, "step"));
  }

  private String downstream(String step) {
    String text = scope + '\0' + tenant + '\0' + key + (step == null ? "" : '\0' + step);
    byte[] digest = Fingerprint.sha256().digest(text.getBytes(StandardCharsets.UTF_8));
    return "once-" + Base64.getUrlEncoder().withoutPadding().encodeToString(digest);
  }

  private static void check(String part, String value, int min, int max, boolean spaceAllowed) {
    if (value == null) {
      // A missing key must fail loudly, never hash "null" into a key that unrelated requests share.
      throw new InvalidKeyException(part + " must not be null");
    }
    int length = value.length();
    if (length < min || length > max) {
      throw new InvalidKeyException(
          part + " must be " + min + "–" + max + " characters long, was " + length);
    }
    for (int i = 0; i < length; i++) {
      char c = value.charAt(i);
      boolean ok = c > 0x20 && c < 0x7F || spaceAllowed && c == 0x20;
      if (!ok) {
        throw new InvalidKeyException(
            part + " must be printable ASCII" + (spaceAllowed ? "" : " without spaces")
                + ": character " + i + " is U+" + String.format("%04X", (int) c));
      }
    }
  }

  /**
   * For logs and messages: {@code scope/key}, or {@code scope[tenant]/key} when there is a tenant
   * (an empty tenant used to show as {@code scope//key}).
   */
  @Override
  public String toString() {
    return tenant.isEmpty() ? scope + "/" + key : scope + "[" + tenant + "]/" + key;
  }

  /** Over the three parts; spelled out so the record stays cheap to hash. */
  @Override
  public int hashCode() {
    return (scope.hashCode() * 31 + tenant.hashCode()) * 31 + key.hashCode();
  }
}
