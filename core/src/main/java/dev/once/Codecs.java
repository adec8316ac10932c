package dev.once;

import java.nio.charset.StandardCharsets;

/** The codecs that need nothing beyond the JDK. */
public final class Codecs {

  private Codecs() {}

  private static final Codec<byte[]> BYTES = new Codec<>() {
    @Override
    public String mediaType() {
      return "application/octet-stream";
    }

    @Override
    public byte[] encode(byte[] value) {
      return value.clone();
    }

    @Override
    public byte[] decode(byte[] bytes) {
      return bytes.clone();
    }
  };

  private static final Codec<String> UTF8 = new Codec<>() {
    @Override
    public String mediaType() {
      return "text/plain;charset=utf-8";
    }

    @Override
    public byte[] encode(String value) {
      return value.getBytes(StandardCharsets.UTF_8);
    }

    @Override
    public String decode(byte[] bytes) {
      return new String(bytes, StandardCharsets.UTF_8);
    }
  };

  private static final byte[] EMPTY = new byte[0];

  private static final Codec<Void> NONE = new Codec<>() {
    @Override
    public String mediaType() {
      return "application/vnd.once.void";
    }

    @Override
    public byte[] encode(Void value) {
      return EMPTY;
    }

    @Override
    public Void decode(byte[] bytes) {
      return null;
    }
  };

  /** Raw bytes, stored as they are. Null results are rejected. */
  public static Codec<byte[]> bytes() {
    return BYTES;
  }

  /** A string as UTF-8. Null results are rejected. */
  public static Codec<String> utf8() {
    return UTF8;
  }

  /** No value: for logic run only for its effect. Stores an empty body. */
  public static Codec<Void> none() {
    return NONE;
  }
}
