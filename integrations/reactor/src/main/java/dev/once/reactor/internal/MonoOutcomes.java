package dev.once.reactor.internal;

import dev.once.Codec;
import dev.once.Result;
import java.util.Arrays;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletionStage;
import reactor.core.publisher.Mono;

/** How a {@code Mono}'s outcome, a value or none, becomes a stage and a stored outcome. Not API. */
public final class MonoOutcomes {

  /**
   * What every stored outcome begins with, before its tag: a NUL, which no text, JSON, protobuf
   * message or Java serialization stream begins with, so bytes another codec stored are refused,
   * never read as a tagged outcome (a plain "visa" was replayed as "isa" when one letter told
   * them apart).
   */
  static final byte[] MAGIC = {0, 'o', 'm'};
  /** The tag of a stored empty result. */
  static final byte EMPTY = 'e';
  /** The tag before a stored value's own bytes. */
  static final byte VALUE = 'v';
  private static final int HEAD = MAGIC.length + 1;

  private MonoOutcomes() {}

  /** {@code codec}'s values and the empty result, told apart by a leading tag byte. */
  public static <T> Codec<Optional<T>> codec(Codec<T> codec) {
    return new TaggedCodec<>(codec);
  }

  /**
   * Subscribes to {@code mono} now and returns the stage of its outcome: a value, an empty
   * Optional when it completes empty, or its error. Nothing ever cancels the subscription.
   */
  public static <T> CompletionStage<Optional<T>> stage(Mono<T> mono) {
    return mono.map(Optional::of).defaultIfEmpty(Optional.empty()).toFuture();
  }

  /** The result of a call, its value null for an empty result. */
  public static <T> Result<T> unwrap(Result<Optional<T>> result) {
    Optional<T> value = result.value();
    return new Result<>(value == null ? null : value.orElse(null), result.replayed(),
        result.token());
  }

  private static final class TaggedCodec<T> implements Codec<Optional<T>> {
    private final Codec<T> codec;
    private final String mediaType;

    TaggedCodec(Codec<T> codec) {
      this.codec = Objects.requireNonNull(codec, "codec");
      this.mediaType = "application/vnd.once.mono; codec=\"" + codec.mediaType() + "\"";
    }

    @Override
    public String mediaType() {
      return mediaType;
    }

    @Override
    public byte[] encode(Optional<T> value) {
      boolean empty = value == null || value.isEmpty();
      byte[] bytes = empty ? new byte[0] : codec.encode(value.get());
      byte[] tagged = new byte[HEAD + bytes.length];
      System.arraycopy(MAGIC, 0, tagged, 0, MAGIC.length);
      tagged[MAGIC.length] = empty ? EMPTY : VALUE;
      System.arraycopy(bytes, 0, tagged, HEAD, bytes.length);
      return tagged;
    }

    @Override
    public Optional<T> decode(byte[] bytes) {
      if (bytes.length < HEAD || !Arrays.equals(bytes, 0, MAGIC.length, MAGIC, 0, MAGIC.length)
          || (bytes[MAGIC.length] != EMPTY && bytes[MAGIC.length] != VALUE)
          || (bytes[MAGIC.length] == EMPTY && bytes.length != HEAD)) {
        throw new IllegalArgumentException("not an outcome stored by once-reactor (those begin"
            + " with a NUL, \"om\" and the tag 'e' or 'v'): was it stored by a blocking call"
            + " with the plain codec? Read and write keys shared with reactive calls with"
            + " OnceReactor.outcomeCodec(codec)");
      }
      if (bytes[MAGIC.length] == EMPTY) {
        return Optional.empty();
      }
      return Optional.ofNullable(codec.decode(Arrays.copyOfRange(bytes, HEAD, bytes.length)));
    }

    @Override
    public String toString() {
      return "OnceReactor.outcomeCodec(" + codec + ")";
    }
  }
}
