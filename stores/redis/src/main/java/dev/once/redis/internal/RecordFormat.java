package dev.once.redis.internal;

import dev.once.Checkpoint;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.spi.EpochMicros;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.Outcome;
import dev.once.spi.Status;
import java.nio.charset.StandardCharsets;
import java.time.Instant;

/**
 * A record as one Redis string, so that a claim can be the native {@code SET key record NX GET PX}:
 * it creates a new record or answers the current one in one command, no script. The Lua scripts
 * change the same bytes ({@code record.lua}).
 *
 * <pre>
 * head: 2 S token lease_until attempts created_at |cn| |cd| |le| claim_id\n fingerprint checkpoint_name checkpoint_data last_error
 * tail: updated_at expires_at |ok| |ot| |ob|\n outcome_kind outcome_type outcome_body
 * </pre>
 *
 * The format version {@code 2}, the status letter ({@code I}, {@code C}, {@code F}), then
 * fixed-width fields separated by single spaces: token, times (epoch microseconds,
 * {@link EpochMicros}) and attempts in 16 decimal digits, byte lengths in 10, the claim id
 * ({@link IdempotencyRecord#claimId}, the 64 bits as an unsigned number) in 16 lowercase hex
 * digits. Fixed widths let a script find a field by its offset instead of parsing; the scripts
 * never read the claim id, they keep it. The tail holds what a completion writes, so the
 * completion script only checks status and token and appends the tail the caller built: Redis
 * runs scripts on its one thread, and string work in Lua is what a script costs most. An empty
 * checkpoint name means no checkpoint (names are never empty), an empty outcome kind no outcome,
 * an empty last error none.
 *
 * <p>Format {@code 1} (before claim ids: the same without {@code claim_id}) is still read, with
 * claim id 0, but never written: a claim that takes such a record over, retries it or reaps it
 * writes format 2, and the Lua writes under the token refuse it as a lost lease (its claimant ran
 * the older version).
 */
public final class RecordFormat {

  /** The format this class writes; the first byte of every record. */
  public static final char VERSION = '2';
  /** Offset of the first byte after the head's fixed part (the fingerprint's), 0-based. */
  private static final int FINGERPRINT_AT = 122;
  /** The same in format 1, which had no claim id. */
  private static final int FINGERPRINT_AT_1 = 105;
  /** Offset of the claim id, 0-based. */
  private static final int CLAIM_ID_AT = 105;
  private static final int CLAIM_ID = 16;
  private static final int DIGEST = 32;
  /** The fixed part of a tail: two 16-digit and three 10-digit decimals, spaces, newline. */
  private static final int TAIL_FIXED = 67;

  private RecordFormat() {}

  /**
   * The record's bytes. Written straight into one array of the record's length: this runs for
   * every claim, and building it through text and streams cost a third of a claim's CPU in the
   * client (issue 27).
   */
  public static byte[] encode(IdempotencyRecord r) {
    byte[] checkpointName = r.checkpoint() == null ? EMPTY : utf8(r.checkpoint().name());
    byte[] checkpointData = r.checkpoint() == null ? EMPTY : r.checkpoint().data();
    byte[] error = r.lastError() == null ? EMPTY : utf8(r.lastError());
    Outcome outcome = r.outcome();
    byte[] kind = kind(outcome);
    byte[] type = type(outcome);
    byte[] body = outcome == null ? EMPTY : outcome.body();
    byte[] out = new byte[FINGERPRINT_AT + DIGEST + checkpointName.length + checkpointData.length
        + error.length + TAIL_FIXED + kind.length + type.length + body.length];
    out[0] = VERSION;
    out[1] = ' ';
    out[2] = (byte) letter(r.status());
    int at = 3;
    at = digits(out, at, r.token(), 16);
    at = digits(out, at, RecordFormat.micros(r.leaseUntil()), 16);
    at = digits(out, at, r.attempts(), 16);
    at = digits(out, at, RecordFormat.micros(r.createdAt()), 16);
    at = digits(out, at, checkpointName.length, 10);
    at = digits(out, at, checkpointData.length, 10);
    at = digits(out, at, error.length, 10);
    at = hex(out, at, r.claimId());
    out[at++] = '\n';
    at = put(out, at, r.fingerprint().digest());
    at = put(out, at, checkpointName);
    at = put(out, at, checkpointData);
    at = put(out, at, error);
    tail(out, at, r.updatedAt(), r.expiresAt(), kind, type, body);
    return out;
  }

  /** A record's tail: what a completion (or any transition) sets last. */
  public static byte[] tail(Instant updatedAt, Instant expiresAt, Outcome outcome) {
    byte[] kind = kind(outcome);
    byte[] type = type(outcome);
    byte[] body = outcome == null ? EMPTY : outcome.body();
    byte[] out = new byte[TAIL_FIXED + kind.length + type.length + body.length];
    tail(out, 0, updatedAt, expiresAt, kind, type, body);
    return out;
  }

  /** Writes a tail at {@code at}, to the end of {@code out}. */
  private static void tail(byte[] out, int at, Instant updatedAt, Instant expiresAt, byte[] kind,
      byte[] type, byte[] body) {
    int first = at;
    // The tail's first field has no space before it.
    int next = digitsUnspaced(out, at, RecordFormat.micros(updatedAt), 16);
    next = digits(out, next, RecordFormat.micros(expiresAt), 16);
    next = digits(out, next, kind.length, 10);
    next = digits(out, next, type.length, 10);
    next = digits(out, next, body.length, 10);
    out[next++] = '\n';
    assert next - first == TAIL_FIXED;
    next = put(out, next, kind);
    next = put(out, next, type);
    put(out, next, body);
  }

  private static byte[] kind(Outcome outcome) {
    return outcome == null ? EMPTY : KINDS[outcome.kind().ordinal()];
  }

  private static byte[] type(Outcome outcome) {
    return outcome == null ? EMPTY : utf8(outcome.mediaType());
  }

  /**
   * The record stored for {@code key}.
   *
   * @throws IllegalStateException if {@code value} is not a record in this format (another
   *     program's value under the store's prefix, or a record of a later format)
   */
  public static IdempotencyRecord decode(IdempotencyKey key, byte[] value) {
    try {
      int fingerprintAt = value.length > 0 && value[0] == '1' ? FINGERPRINT_AT_1 : FINGERPRINT_AT;
      if (value.length < fingerprintAt + DIGEST + TAIL_FIXED
          || (value[0] != VERSION && value[0] != '1') || value[1] != ' '
          || value[fingerprintAt - 1] != '\n') {
        throw notARecord(key, null);
      }
      long claimId = fingerprintAt == FINGERPRINT_AT_1 ? 0 : claimId(value, key);
      Status status = status(value[2], key);
      long token = number(value, 4, 16, key);
      long leaseUntil = number(value, 21, 16, key);
      long attempts = number(value, 38, 16, key);
      long createdAt = number(value, 55, 16, key);
      int at = fingerprintAt;
      byte[] digest = slice(value, at, DIGEST);
      at += DIGEST;
      byte[] checkpointName = slice(value, at, (int) number(value, 72, 10, key));
      at += checkpointName.length;
      byte[] checkpointData = slice(value, at, (int) number(value, 83, 10, key));
      at += checkpointData.length;
      byte[] error = slice(value, at, (int) number(value, 94, 10, key));
      at += error.length;
      int tail = at;
      if (value.length < tail + TAIL_FIXED || value[tail + TAIL_FIXED - 1] != '\n') {
        throw notARecord(key, null);
      }
      long updatedAt = number(value, tail, 16, key);
      long expiresAt = number(value, tail + 17, 16, key);
      at = tail + TAIL_FIXED;
      byte[] kind = slice(value, at, (int) number(value, tail + 34, 10, key));
      at += kind.length;
      byte[] type = slice(value, at, (int) number(value, tail + 45, 10, key));
      at += type.length;
      byte[] body = slice(value, at, (int) number(value, tail + 56, 10, key));
      at += body.length;
      if (at != value.length) {
        throw notARecord(key, null);
      }
      Checkpoint checkpoint = checkpointName.length == 0 ? null
          : Checkpoint.of(text(checkpointName), checkpointData);
      Outcome outcome = kind.length == 0 ? null
          : Outcome.of(Outcome.Kind.valueOf(text(kind)), text(type), body);
      return new IdempotencyRecord(key, status, Fingerprint.fromDigest(digest), token,
          EpochMicros.toInstant(leaseUntil), Math.toIntExact(attempts), checkpoint,
          status == Status.COMPLETED ? outcome : null, error.length == 0 ? null : text(error),
          EpochMicros.toInstant(createdAt), EpochMicros.toInstant(updatedAt), EpochMicros.toInstant(expiresAt),
          claimId);
    } catch (IndexOutOfBoundsException | IllegalArgumentException | ArithmeticException e) {
      throw notARecord(key, e);
    }
  }

  private static IllegalStateException notARecord(IdempotencyKey key, Throwable cause) {
    return new IllegalStateException("the Redis value of " + key + " is not a record of Once"
        + " (format 1 or 2): another program writes under the store's key prefix, or a later version"
        + " of Once wrote it", cause);
  }

  /**
   * Writes a space and {@code value} in {@code width} zero-padded decimal digits at {@code at};
   * returns where the next field starts.
   *
   * @throws IllegalArgumentException if {@code value} is negative or needs more digits
   */
  private static int digits(byte[] out, int at, long value, int width) {
    out[at] = ' ';
    return digitsUnspaced(out, at + 1, value, width);
  }

  private static int digitsUnspaced(byte[] out, int at, long value, int width) {
    if (value < 0 || width < 19 && value >= POWERS_OF_TEN[width]) {
      throw new IllegalArgumentException(value + " does not fit " + width + " digits");
    }
    long rest = value;
    for (int i = at + width - 1; i >= at; i--) {
      out[i] = (byte) ('0' + rest % 10);
      rest /= 10;
    }
    return at + width;
  }

  /** 10^0 to 10^18. */
  private static final long[] POWERS_OF_TEN = new long[19];

  static {
    POWERS_OF_TEN[0] = 1;
    for (int i = 1; i < POWERS_OF_TEN.length; i++) {
      POWERS_OF_TEN[i] = POWERS_OF_TEN[i - 1] * 10;
    }
  }

  /** Writes a space and the 64 bits of {@code value} in 16 lowercase hex digits at {@code at}. */
  private static int hex(byte[] out, int at, long value) {
    out[at] = ' ';
    long rest = value;
    for (int i = at + CLAIM_ID; i > at; i--) {
      out[i] = HEX_DIGITS[(int) (rest & 0xf)];
      rest >>>= 4;
    }
    return at + 1 + CLAIM_ID;
  }

  private static final byte[] HEX_DIGITS = "0123456789abcdef".getBytes(StandardCharsets.US_ASCII);

  private static int put(byte[] out, int at, byte[] bytes) {
    System.arraycopy(bytes, 0, out, at, bytes.length);
    return at + bytes.length;
  }

  /** The claim id of a record of the current format (after a space, 16 lowercase hex digits). */
  private static long claimId(byte[] value, IdempotencyKey key) {
    if (value[CLAIM_ID_AT - 1] != ' ') {
      throw notARecord(key, null);
    }
    long n = 0;
    for (int i = CLAIM_ID_AT; i < CLAIM_ID_AT + CLAIM_ID; i++) {
      int digit = Character.digit(value[i], 16);
      if (digit < 0 || value[i] >= 'A' && value[i] <= 'F') {
        throw notARecord(key, null);
      }
      n = n << 4 | digit;
    }
    return n;
  }

  /** The decimal of {@code width} digits at {@code at}. */
  private static long number(byte[] value, int at, int width, IdempotencyKey key) {
    long n = 0;
    for (int i = at; i < at + width; i++) {
      int digit = value[i] - '0';
      if (digit < 0 || digit > 9) {
        throw notARecord(key, null);
      }
      n = n * 10 + digit;
    }
    return n;
  }

  private static byte[] slice(byte[] value, int at, int length) {
    if (length < 0 || at + length > value.length) {
      throw new IndexOutOfBoundsException(at + length);
    }
    byte[] out = new byte[length];
    System.arraycopy(value, at, out, 0, length);
    return out;
  }

  private static char letter(Status status) {
    return switch (status) {
      case IN_PROGRESS -> 'I';
      case COMPLETED -> 'C';
      case FAILED -> 'F';
    };
  }

  private static Status status(byte letter, IdempotencyKey key) {
    return switch (letter) {
      case 'I' -> Status.IN_PROGRESS;
      case 'C' -> Status.COMPLETED;
      case 'F' -> Status.FAILED;
      default -> throw notARecord(key, null);
    };
  }

  private static String text(byte[] b) {
    return new String(b, StandardCharsets.UTF_8);
  }

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static byte[] ascii(String s) {
    return s.getBytes(StandardCharsets.US_ASCII);
  }

  private static final byte[] EMPTY = new byte[0];

  /** Each outcome kind's name, in ASCII, by ordinal. */
  private static final byte[][] KINDS = kinds();

  private static byte[][] kinds() {
    Outcome.Kind[] kinds = Outcome.Kind.values();
    byte[][] names = new byte[kinds.length][];
    for (Outcome.Kind kind : kinds) {
      names[kind.ordinal()] = ascii(kind.name());
    }
    return names;
  }

  /**
   * Refuses {@code now} and {@code now + duration} if a record cannot hold them: bad input,
   * found before anything is sent (encoded inside a command's send, the refusal would look like
   * a failed command, retryable and perhaps applied).
   *
   * @throws IllegalArgumentException outside 1970 to 2255
   */
  public static void checkTimes(Instant now, java.time.Duration duration) {
    micros(now);
    Instant later;
    try {
      later = now.plus(duration);
    } catch (java.time.DateTimeException | ArithmeticException e) {
      throw new IllegalArgumentException(now + " + " + duration
          + " is outside what the Redis store can hold (1970 to the year 2255)", e);
    }
    micros(later);
  }

  /** 2^53: beyond it Lua's doubles stop being exact integers. */
  private static final long LUA_EXACT = 1L << 53;

  /**
   * {@code instant} in epoch microseconds, floored ({@link EpochMicros}), within what the
   * scripts compare exactly: Lua reads numbers as doubles, exact up to 2^53 µs (the year 2255).
   *
   * @throws IllegalArgumentException outside 1970 to 2255
   */
  public static long micros(Instant instant) {
    long micros;
    try {
      micros = EpochMicros.of(instant);
    } catch (IllegalArgumentException e) {
      micros = Long.MAX_VALUE;
    }
    if (micros < 0 || micros >= LUA_EXACT) {
      throw new IllegalArgumentException("instant " + instant
          + " is outside what the Redis store can hold (1970 to the year 2255)");
    }
    return micros;
  }
}
