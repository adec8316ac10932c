package dev.once.redis.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.Checkpoint;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.spi.EpochMicros;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.Outcome;
import dev.once.spi.Status;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;

/**
 * The record's bytes against the layout {@link RecordFormat}'s comment gives, spelled out here with
 * {@link String#format}, so that a faster encoder cannot drift from what the Lua scripts read.
 */
class RecordFormatTest {

  private static final long LUA_EXACT = 1L << 53;

  @Property(tries = 300)
  void aRecordIsWrittenAsTheLayoutSaysAndReadBackAsItWas(@ForAll("records") IdempotencyRecord r) {
    byte[] encoded = RecordFormat.encode(r);

    assertThat(encoded).isEqualTo(layout(r));
    assertThat(RecordFormat.decode(r.key(), encoded)).isEqualTo(r);
  }

  @Property(tries = 200)
  void aTailIsWrittenAsTheLayoutSays(@ForAll("micros") long updated, @ForAll("micros") long expires,
      @ForAll("outcomes") Outcome outcome) {
    Instant updatedAt = EpochMicros.toInstant(updated);
    Instant expiresAt = EpochMicros.toInstant(expires);

    assertThat(RecordFormat.tail(updatedAt, expiresAt, outcome))
        .isEqualTo(tail(updatedAt, expiresAt, outcome));
  }

  @Property(tries = 100)
  void aRecordKeyIsThePrefixScopeTenantAndKeyJoinedBySpaces(@ForAll("keys") IdempotencyKey key) {
    assertThat(new KeyLayout("once:eu:").record(key)).isEqualTo(
        ("once:eu: " + key.scope() + " " + key.tenant() + " " + key.key())
            .getBytes(StandardCharsets.US_ASCII));
    assertThat(new KeyLayout("once:eu:").idempotencyKey(new KeyLayout("once:eu:").record(key)))
        .isEqualTo(key);
  }

  @Test
  void fieldsThatDoNotFitTheirWidthAreRefusedNotCut() {
    IdempotencyRecord r = record(Status.IN_PROGRESS, null, null, null);

    assertThatThrownBy(() -> RecordFormat.encode(withToken(r, -1)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("16 digits");
    assertThatThrownBy(() -> RecordFormat.encode(withToken(r, 10_000_000_000_000_000L)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("16 digits");
    assertThat(RecordFormat.encode(withToken(r, 9_999_999_999_999_999L))).startsWith(
        "2 I 9999999999999999 ".getBytes(StandardCharsets.US_ASCII));
    assertThatThrownBy(() -> RecordFormat.micros(EpochMicros.toInstant(LUA_EXACT)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("2255");
  }

  @Test
  void numbersSentToScriptsAreTheirDecimalDigits() {
    long[] numbers = {0, 1, 9, 10, 99, 100, 12345, Long.MAX_VALUE, -1, -10, Long.MIN_VALUE};
    for (long n : numbers) {
      assertThat(new String(RedisCalls.number(n), StandardCharsets.US_ASCII))
          .isEqualTo(Long.toString(n));
    }
  }

  private static IdempotencyRecord withToken(IdempotencyRecord r, long token) {
    return new IdempotencyRecord(r.key(), r.status(), r.fingerprint(), token, r.leaseUntil(),
        r.attempts(), r.checkpoint(), r.outcome(), r.lastError(), r.createdAt(), r.updatedAt(),
        r.expiresAt(), r.claimId());
  }

  private static IdempotencyRecord record(Status status, Checkpoint checkpoint, Outcome outcome,
      String error) {
    Instant t = EpochMicros.toInstant(1_700_000_000_123_456L);
    return new IdempotencyRecord(IdempotencyKey.of("s", "t", "k"), status,
        Fingerprint.of("x".getBytes(StandardCharsets.UTF_8)), 7, t, 1, checkpoint, outcome, error,
        t, t, t, 42);
  }

  /** The layout of RecordFormat's comment, written the slow, obvious way. */
  private static byte[] layout(IdempotencyRecord r) {
    byte[] cn = r.checkpoint() == null ? new byte[0]
        : r.checkpoint().name().getBytes(StandardCharsets.UTF_8);
    byte[] cd = r.checkpoint() == null ? new byte[0] : r.checkpoint().data();
    byte[] le = r.lastError() == null ? new byte[0]
        : r.lastError().getBytes(StandardCharsets.UTF_8);
    char letter = switch (r.status()) {
      case IN_PROGRESS -> 'I';
      case COMPLETED -> 'C';
      case FAILED -> 'F';
    };
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.writeBytes(String.format("2 %c %016d %016d %016d %016d %010d %010d %010d %016x\n", letter,
        r.token(), EpochMicros.of(r.leaseUntil()), r.attempts(), EpochMicros.of(r.createdAt()),
        cn.length, cd.length, le.length, r.claimId()).getBytes(StandardCharsets.US_ASCII));
    out.writeBytes(r.fingerprint().digest());
    out.writeBytes(cn);
    out.writeBytes(cd);
    out.writeBytes(le);
    out.writeBytes(tail(r.updatedAt(), r.expiresAt(), r.outcome()));
    return out.toByteArray();
  }

  private static byte[] tail(Instant updatedAt, Instant expiresAt, Outcome outcome) {
    byte[] kind = outcome == null ? new byte[0]
        : outcome.kind().name().getBytes(StandardCharsets.US_ASCII);
    byte[] type = outcome == null ? new byte[0]
        : outcome.mediaType().getBytes(StandardCharsets.UTF_8);
    byte[] body = outcome == null ? new byte[0] : outcome.body();
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.writeBytes(String.format("%016d %016d %010d %010d %010d\n", EpochMicros.of(updatedAt),
        EpochMicros.of(expiresAt), kind.length, type.length, body.length)
        .getBytes(StandardCharsets.US_ASCII));
    out.writeBytes(kind);
    out.writeBytes(type);
    out.writeBytes(body);
    return out.toByteArray();
  }

  @Provide
  Arbitrary<Long> micros() {
    return Arbitraries.oneOf(Arbitraries.longs().between(0, LUA_EXACT - 1),
        Arbitraries.of(0L, 1L, 999_999L, 1_000_000L, LUA_EXACT - 1));
  }

  @Provide
  Arbitrary<IdempotencyKey> keys() {
    Arbitrary<String> part = Arbitraries.strings().withCharRange('!', '~').ofMinLength(1)
        .ofMaxLength(20);
    Arbitrary<String> key = Arbitraries.strings().withCharRange(' ', '~').ofMinLength(1)
        .ofMaxLength(60).filter(s -> !s.isBlank() && s.strip().equals(s));
    Arbitrary<String> tenant = Arbitraries.oneOf(part, Arbitraries.just(""));
    return Combinators.combine(part, tenant, key).as(IdempotencyKey::of)
        .ignoreException(IllegalArgumentException.class);
  }

  @Provide
  Arbitrary<Outcome> outcomes() {
    return Combinators.combine(Arbitraries.of(Outcome.Kind.class),
            Arbitraries.strings().ofMaxLength(40).filter(s -> !s.isEmpty()),
            Arbitraries.bytes().array(byte[].class).ofMaxSize(300))
        .as(Outcome::of).ignoreException(IllegalArgumentException.class);
  }

  @Provide
  Arbitrary<IdempotencyRecord> records() {
    Arbitrary<Checkpoint> checkpoints = Combinators.combine(
            Arbitraries.strings().ofMinLength(1).ofMaxLength(Checkpoint.MAX_NAME_LENGTH),
            Arbitraries.bytes().array(byte[].class).ofMaxSize(200))
        .as(Checkpoint::of).ignoreException(IllegalArgumentException.class).injectNull(0.4);
    Arbitrary<Outcome> outcomes = outcomes().injectNull(0.3);
    Arbitrary<String> errors = Arbitraries.strings().ofMaxLength(80).filter(s -> !s.isEmpty())
        .injectNull(0.5);
    Arbitrary<Long> tokens = Arbitraries.oneOf(
        Arbitraries.longs().between(0, 9_999_999_999_999_999L),
        Arbitraries.of(0L, 1L, 9_999_999_999_999_999L));
    Arbitrary<Long> claimIds = Arbitraries.oneOf(Arbitraries.longs(),
        Arbitraries.of(0L, -1L, Long.MIN_VALUE, Long.MAX_VALUE));
    Arbitrary<Instant> instants = micros().map(EpochMicros::toInstant);
    return Combinators.combine(keys(), Arbitraries.of(Status.class), tokens,
            Arbitraries.integers().between(0, Integer.MAX_VALUE), checkpoints, outcomes, errors,
            instants)
        .flatAs((key, status, token, attempts, checkpoint, outcome, error, lease) ->
            Combinators.combine(instants, instants, instants, claimIds, Arbitraries.bytes()
                    .array(byte[].class).ofMinSize(1).ofMaxSize(64))
                .as((created, updated, expires, claimId, fingerprinted) -> new IdempotencyRecord(
                    key, status, Fingerprint.of(fingerprinted), token, lease, attempts,
                    checkpoint, status == Status.COMPLETED && outcome == null
                        ? Outcome.of(Outcome.Kind.SUCCESS, "text/plain", new byte[0])
                        : status == Status.COMPLETED ? outcome : null,
                    error, created, updated, expires, claimId)));
  }
}
