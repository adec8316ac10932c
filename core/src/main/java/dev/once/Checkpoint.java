package dev.once;

import java.util.Arrays;
import java.util.Objects;

/**
 * A named recovery point with a small payload, written under the fencing token. A worker that takes
 * over an unfinished operation receives the last checkpoint and resumes from it instead of redoing
 * finished steps (sagas).
 */
public final class Checkpoint {

  /** Longest accepted checkpoint name. */
  public static final int MAX_NAME_LENGTH = 128;

  private final String name;
  private final byte[] data;

  private Checkpoint(String name, byte[] data) {
    this.name = name;
    this.data = data;
  }

  /**
   * A checkpoint. {@code name} is 1–{@value #MAX_NAME_LENGTH} characters; {@code data} may be
   * empty, never null; it is copied.
   */
  public static Checkpoint of(String name, byte[] data) {
    Objects.requireNonNull(name, "checkpoint name");
    Objects.requireNonNull(data, "checkpoint data");
    if (name.isEmpty() || name.length() > MAX_NAME_LENGTH) {
      throw new IllegalArgumentException(
          "checkpoint name must be 1–" + MAX_NAME_LENGTH + " characters, was " + name.length());
    }
    return new Checkpoint(name, data.clone());
  }

  public String name() {
    return name;
  }

  /** A copy of the payload. */
  public byte[] data() {
    return data.clone();
  }

  /** Payload size in bytes. */
  public int size() {
    return data.length;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Checkpoint other && name.equals(other.name) && Arrays.equals(data, other.data);
  }

  @Override
  public int hashCode() {
    return name.hashCode() * 31 + Arrays.hashCode(data);
  }

  @Override
  public String toString() {
    return "Checkpoint[" + name + ", " + data.length + " bytes]";
  }
}
