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
 */
public enum Script {
  CLAIM("claim.lua"),
  COMPLETE("complete.lua"),
  FAIL("fail.lua"),
  EXTEND("extend.lua"),
  CHECKPOINT("checkpoint.lua"),
  PURGE("purge.lua"),
  REAP("reap.lua");

  private final String source;
  private final String sha;

  Script(String resource) {
    try (InputStream in = Script.class.getResourceAsStream(resource)) {
      if (in == null) {
        throw new IllegalStateException("missing script resource " + resource);
      }
      this.source = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    try {
      this.sha = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-1")
          .digest(source.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("the JDK has no SHA-1", e);
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
