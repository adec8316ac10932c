package dev.once;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.Objects;

/**
 * The SHA-256 digest of the significant content of a request. The same key with another
 * fingerprint is misuse and is answered {@link KeyReusedException}.
 *
 * <p>Make one from raw bytes ({@link #of(byte[])}), a string ({@link #of(String)}) or several parts
 * ({@link #ofParts(String...)}, length-prefixed so {@code ("ab","c")} and {@code ("a","bc")} differ).
 * For JSON whose field order must not matter, use the canonical-JSON fingerprint of
 * {@code once-jackson}.
 */
public final class Fingerprint {

  /** Length of a SHA-256 digest in bytes. */
  public static final int LENGTH = 32;

  private static final HexFormat HEX = HexFormat.of();

  private final byte[] digest;

  private Fingerprint(byte[] digest) {
    this.digest = digest;
  }

  /** The fingerprint of raw content. */
  public static Fingerprint of(byte[] content) {
    Objects.requireNonNull(content, "content");
    return new Fingerprint(sha256().digest(content));
  }

  /** The fingerprint of a string's UTF-8 bytes. */
  public static Fingerprint of(String content) {
    Objects.requireNonNull(content, "content");
    return of(content.getBytes(StandardCharsets.UTF_8));
  }

  /**
   * The fingerprint of several parts, each length-prefixed so that no two different part lists
   * share a fingerprint by concatenation. A null part is rejected rather than hashed as "null".
   */
  public static Fingerprint ofParts(String... parts) {
    Objects.requireNonNull(parts, "parts");
    MessageDigest md = sha256();
    ByteBuffer length = ByteBuffer.allocate(Integer.BYTES);
    for (int i = 0; i < parts.length; i++) {
      if (parts[i] == null) {
        throw new IllegalArgumentException("fingerprint part " + i + " is null");
      }
      byte[] bytes = parts[i].getBytes(StandardCharsets.UTF_8);
      md.update(length.clear().putInt(bytes.length).array());
      md.update(bytes);
    }
    return new Fingerprint(md.digest());
  }

  /** Wraps a digest read back from a store. */
  public static Fingerprint fromDigest(byte[] digest) {
    Objects.requireNonNull(digest, "digest");
    if (digest.length != LENGTH) {
      throw new IllegalArgumentException(
          "a fingerprint is " + LENGTH + " bytes, got " + digest.length);
    }
    return new Fingerprint(digest.clone());
  }

  /** Parses the form {@link #hex()} prints. */
  public static Fingerprint fromHex(String hex) {
    Objects.requireNonNull(hex, "hex");
    return fromDigest(HEX.parseHex(hex));
  }

  /** A copy of the 32-byte digest. */
  public byte[] digest() {
    return digest.clone();
  }

  /** The digest as 64 lowercase hex characters. */
  public String hex() {
    return HEX.formatHex(digest);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Fingerprint other && MessageDigest.isEqual(digest, other.digest);
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(digest);
  }

  @Override
  public String toString() {
    return "Fingerprint[" + hex().substring(0, 12) + "…]";
  }

  /** A fresh SHA-256 digest: a copy of this one, without a provider lookup per call. */
  private static final MessageDigest SHA_256 = newSha256();

  static MessageDigest sha256() {
    try {
      return (MessageDigest) SHA_256.clone();
    } catch (CloneNotSupportedException e) {
      return newSha256(); // a provider whose digests cannot be copied: look one up each time
    }
  }

  private static MessageDigest newSha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every Java platform must provide SHA-256", e);
    }
  }
}
