package dev.once.redis.internal;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * One Lua script of the store (a resource next to this class) and its SHA-1, for {@code EVALSHA}.
 * The digest is computed here, so nothing is loaded up front: the first {@code EVALSHA} a server
 * answers {@code NOSCRIPT} falls back to {@code EVAL}, which caches the script on that server.
 * The scripts that change a record under its token start with {@code record.lua} (the record
 * format's parser and writer).
 */
public enum Script {
  COMPLETE("complete.lua", true),
  FAIL("fail.lua", true),
  EXTEND("extend.lua", true),
  CHECKPOINT("checkpoint.lua", true),
  SWAP("swap.lua", false);

  private final String source;
  private final String sha;

  Script(String resource, boolean withRecordFormat) {
    this.source = (withRecordFormat ? read("record.lua") : "") + read(resource);
    try {
      this.sha = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-1")
          .digest(source.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("the JDK has no SHA-1", e);
    }
  }

  private static String read(String resource) {
    try (InputStream in = Script.class.getResourceAsStream(resource)) {
      if (in == null) {
        throw new IllegalStateException("missing script resource " + resource);
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The Lua source. */
  public String source() {
    return source;
  }

  /** The SHA-1 Redis knows the script by. */
  public String sha() {
    return sha;
  }
}
