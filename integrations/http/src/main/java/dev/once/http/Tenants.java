package dev.once.http;

import dev.once.IdempotencyKey;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Base64;

/** Turns a resolved caller identity into a tenant string the store accepts. */
public final class Tenants {

  /** Marks a digested identity; identities kept as they are never start with it. */
  static final char DIGEST_MARK = '~';

  private Tenants() {}

  /**
   * {@code identity} itself when it is a valid tenant that does not start with {@code ~};
   * otherwise {@code ~} and the SHA-256 of its UTF-8 bytes in base64url (44 characters). The two
   * forms cannot collide, so no identity can be crafted to land in another's tenant.
   */
  public static String normalize(String identity) {
    if (!identity.isEmpty() && identity.charAt(0) != DIGEST_MARK && isPlain(identity)) {
      return identity;
    }
    return identity.isEmpty() ? "" : digest(identity);
  }

  /** {@code ~} and the base64url SHA-256 of {@code value}. */
  public static String digest(String value) {
    try {
      byte[] hash = MessageDigest.getInstance("SHA-256")
          .digest(value.getBytes(StandardCharsets.UTF_8));
      return DIGEST_MARK + Base64.getUrlEncoder().withoutPadding().encodeToString(hash);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every Java platform must provide SHA-256", e);
    }
  }

  private static boolean isPlain(String identity) {
    if (identity.length() > IdempotencyKey.MAX_TENANT_LENGTH) {
      return false;
    }
    for (int i = 0; i < identity.length(); i++) {
      char c = identity.charAt(i);
      if (c <= 0x20 || c >= 0x7F) {
        return false;
      }
    }
    return true;
  }
}
