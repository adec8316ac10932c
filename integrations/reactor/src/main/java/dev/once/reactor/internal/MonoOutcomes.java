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

  /** The tag of a stored empty result. */
  static final byte EMPTY = 'e';
  /** The tag before a stored value's own bytes. */
  static final byte VALUE = 'v';

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
      if (value == null || value.isEmpty()) {
        return new byte[] {EMPTY};
      }
      byte[] bytes = codec.encode(value.get());
      byte[] tagged = new byte[bytes.length + 1];
      tagged[0] = VALUE;
      System.arraycopy(bytes, 0, tagged, 1, bytes.length);
      return tagged;
    }

    @Override
    public Optional<T> decode(byte[] bytes) {
      if (bytes.length == 1 && bytes[0] == EMPTY) {
        return Optional.empty();
      }
      if (bytes.length == 0 || bytes[0] != VALUE) {
        throw new IllegalArgumentException("not an outcome stored by once-reactor (it begins"
            + " with the tag 'e' or 'v'): was it stored by a blocking call with the plain codec?"
            + " Read it with OnceReactor.outcomeCodec(codec)");
      }
      return Optional.ofNullable(codec.decode(Arrays.copyOfRange(bytes, 1, bytes.length)));
    }

    @Override
    public String toString() {
      return "OnceReactor.outcomeCodec(" + codec + ")";
    }
  }
}
