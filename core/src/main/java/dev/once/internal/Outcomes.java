package dev.once.internal;

import dev.once.Codec;
import dev.once.spi.Outcome;

/** The outcome an engine stores for the value its work returned. */
final class Outcomes {

  /** Logged under the SPI's outcome, where it always was. */
  private static final System.Logger LOG = System.getLogger(Outcome.class.getName());

  private Outcomes() {}

  /**
   * {@code value} encoded by {@code codec}; or, when it cannot be stored (larger than
   * {@code maxPayloadBytes}, or the codec threw, an Error included), the
   * {@link Outcome#notStored} marker, after logging a warning and telling {@code onNotStored} why. For execution engines: the work
   * has run, so a value that cannot be stored must still finish the key, never make it run again.
   * A {@link VirtualMachineError} passes through.
   */
  static <T> Outcome encodeOrNotStored(Codec<T> codec, T value, int maxPayloadBytes,
      Object what, java.util.function.Consumer<Throwable> onNotStored) {
    try {
      return Outcome.encode(codec, value, maxPayloadBytes, what);
    } catch (VirtualMachineError e) {
      throw e;
    } catch (Throwable e) {
      LOG.log(System.Logger.Level.WARNING, "the result of " + what + " cannot be stored (" + e.getMessage() + "); the key is completed without it,"
          + " and duplicates get OutcomeNotStoredException instead of a re-run", e);
      onNotStored.accept(e);
      String message = e.getMessage();
      return Outcome.notStored(e.getClass().getName() + (message == null ? "" : ": " + message));
    }
  }
}
