package dev.once.spi;

import dev.once.Codec;
import dev.once.PayloadTooLargeException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Objects;

/**
 * The stored result of a finished operation: a SUCCESS value, or a terminal FAILURE that is replayed
 * to duplicates instead of being re-executed. The body is opaque bytes written by a codec.
 */
public final class Outcome {

  /** Whether the operation succeeded or failed terminally. */
  public enum Kind { SUCCESS, FAILURE }

  /** Media type of the failure bodies {@link #failure(String, String)} writes. */
  public static final String FAILURE_MEDIA_TYPE = "application/vnd.once.failure";

  /**
   * Media type of the marker {@link #notStored(String)} writes: the work ran and succeeded, but
   * its result could not be stored (too large, or its codec failed).
   */
  public static final String NOT_STORED_MEDIA_TYPE = "application/vnd.once.not-stored";

  /** The longest reason {@link #notStored(String)} keeps, in characters. */
  private static final int MAX_REASON_CHARS = 1000;

  private final Kind kind;
  private final String mediaType;
  private final byte[] body;

  private Outcome(Kind kind, String mediaType, byte[] body) {
    this.kind = kind;
    this.mediaType = mediaType;
    this.body = body;
  }

  /** An outcome; the body is copied. */
  public static Outcome of(Kind kind, String mediaType, byte[] body) {
    Objects.requireNonNull(kind, "kind");
    Objects.requireNonNull(mediaType, "mediaType");
    Objects.requireNonNull(body, "body");
    return new Outcome(kind, mediaType, body.clone());
  }

  /** A successful outcome. */
  public static Outcome success(String mediaType, byte[] body) {
    return of(Kind.SUCCESS, mediaType, body);
  }

  /**
   * A successful outcome: {@code value} encoded by {@code codec}.
   *
   * @throws PayloadTooLargeException if the encoded value exceeds {@code maxPayloadBytes}
   */
  public static <T> Outcome encode(Codec<T> codec, T value, int maxPayloadBytes, Object what) {
    byte[] body = codec.encode(value);
    if (body.length > maxPayloadBytes) {
      throw new PayloadTooLargeException("outcome of " + what, body.length, maxPayloadBytes);
    }
    return new Outcome(Kind.SUCCESS, codec.mediaType(), body);
  }

  /** The terminal failure of {@code failure}: its class name and message. */
  public static Outcome failure(Throwable failure) {
    return failure(failure.getClass().getName(), failure.getMessage());
  }

  /** A terminal failure described by the exception's type and message. */
  public static Outcome failure(String type, String message) {
    Objects.requireNonNull(type, "type");
    String text = type + "\n" + (message == null ? "" : message);
    return new Outcome(Kind.FAILURE, FAILURE_MEDIA_TYPE, text.getBytes(StandardCharsets.UTF_8));
  }

  /**
   * The outcome of work that ran and succeeded but whose result could not be stored: a SUCCESS
   * marker carrying only {@code reason} (cut to 1,000 characters). Stored like any outcome, so
   * the key is finished and the work never runs again because its result was big; a duplicate
   * is told the result was not kept ({@code OutcomeNotStoredException}).
   */
  public static Outcome notStored(String reason) {
    Objects.requireNonNull(reason, "reason");
    String text = reason.length() > MAX_REASON_CHARS ? reason.substring(0, MAX_REASON_CHARS)
        : reason;
    return new Outcome(Kind.SUCCESS, NOT_STORED_MEDIA_TYPE, text.getBytes(StandardCharsets.UTF_8));
  }

  /** Whether this is the marker of {@link #notStored(String)}. */
  public boolean isNotStored() {
    return kind == Kind.SUCCESS && NOT_STORED_MEDIA_TYPE.equals(mediaType);
  }

  /** For the marker of {@link #notStored(String)}: why the result was not kept. */
  public String notStoredReason() {
    return new String(body, StandardCharsets.UTF_8);
  }

  public Kind kind() {
    return kind;
  }

  public String mediaType() {
    return mediaType;
  }

  /** A copy of the body. */
  public byte[] body() {
    return body.clone();
  }

  /** Body size in bytes. */
  public int size() {
    return body.length;
  }

  /** For a failure written by {@link #failure}: the exception type. */
  public String failureType() {
    String text = new String(body, StandardCharsets.UTF_8);
    int nl = text.indexOf('\n');
    return nl < 0 ? text : text.substring(0, nl);
  }

  /** For a failure written by {@link #failure}: the exception message, "" if none. */
  public String failureMessage() {
    String text = new String(body, StandardCharsets.UTF_8);
    int nl = text.indexOf('\n');
    return nl < 0 ? "" : text.substring(nl + 1);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Outcome other && kind == other.kind && mediaType.equals(other.mediaType)
        && Arrays.equals(body, other.body);
  }

  @Override
  public int hashCode() {
    return (kind.hashCode() * 31 + mediaType.hashCode()) * 31 + Arrays.hashCode(body);
  }

  @Override
  public String toString() {
    return "Outcome[" + kind + ", " + mediaType + ", " + body.length + " bytes]";
  }
}
