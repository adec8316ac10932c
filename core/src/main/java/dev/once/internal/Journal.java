package dev.once.internal;

import dev.once.Checkpoint;
import dev.once.spi.Outcome;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The steps of one key's work, kept in the record's checkpoint (a fenced write every store already
 * has, carried across takeovers and retries): each step's state and journaled result, in the order
 * the steps first ran, the user's own last checkpoint, and the terminal failure the work committed
 * to once compensation began. Immutable; every change makes a new journal, written whole.
 *
 * <p>A record whose checkpoint is not named {@link #CHECKPOINT_NAME} holds the user's checkpoint
 * alone: a key that never used steps is stored exactly as before steps existed.
 */
public final class Journal {

  /** The checkpoint name the journal is stored under; refused for users' checkpoints. */
  public static final String CHECKPOINT_NAME = "once:journal";
  /** Version 2 adds whether each step is compensable and the count of failed compensations. */
  private static final int VERSION = 2;

  /** Where a step is. */
  public enum State {
    /** Journaled before a step with a reconciler runs: its effect may exist. */
    STARTED,
    /** Finished; the body is its encoded result. */
    DONE,
    /** Finished, but its result could not be stored; the body is why. */
    NOT_STORED,
    /** Failed terminally; the body is "type\nmessage". */
    FAILED,
    /** Finished, then undone by its compensation; the body is still its result. */
    COMPENSATED
  }

  /**
   * One step: its state, the media type and bytes of what it journaled, and whether it has a
   * compensation (so an attempt that does not reach it knows it must be undone; false in journals
   * written before version 2, which did not say).
   */
  public record Entry(String name, State state, String mediaType, byte[] body,
      boolean compensable) {

    /** This entry in {@code next} state, with the same result and compensability. */
    public Entry in(State next) {
      return new Entry(name, next, mediaType, body, compensable);
    }
  }

  private final Checkpoint user;
  private final Map<String, Entry> entries;
  /** The terminal failure being compensated, or null. */
  private final Outcome failure;
  /** How many attempts at compensating {@link #failure} failed. */
  private final int compensationFailures;

  private static final Journal EMPTY = new Journal(null, Map.of(), null, 0);

  private Journal(Checkpoint user, Map<String, Entry> entries, Outcome failure,
      int compensationFailures) {
    this.user = user;
    this.entries = entries;
    this.failure = failure;
    this.compensationFailures = compensationFailures;
  }

  /** The journal held by a record's checkpoint (null: none). */
  public static Journal of(Checkpoint checkpoint) {
    if (checkpoint == null) {
      return EMPTY; // a fresh claim's: shared, as a journal is immutable
    }
    if (!checkpoint.name().equals(CHECKPOINT_NAME)) {
      return new Journal(checkpoint, Map.of(), null, 0);
    }
    return decode(checkpoint.data());
  }

  /** The user's last checkpoint, or null. */
  public Checkpoint user() {
    return user;
  }

  /** The step named {@code name}, or null. */
  public Entry entry(String name) {
    return entries.get(name);
  }

  /** Every step, in the order they first ran. */
  public List<Entry> entries() {
    return List.copyOf(entries.values());
  }

  /** How many steps are journaled. */
  public int size() {
    return entries.size();
  }

  /** The terminal failure the work committed to, or null. */
  public Outcome failure() {
    return failure;
  }

  /** How many attempts at compensating the committed failure failed so far. */
  public int compensationFailures() {
    return compensationFailures;
  }

  /** This journal with {@code entry} set (added last, or replacing the step's earlier state). */
  public Journal with(Entry entry) {
    Map<String, Entry> next = new LinkedHashMap<>(entries);
    next.put(entry.name(), entry);
    return new Journal(user, Collections.unmodifiableMap(next), failure, compensationFailures);
  }

  /** This journal with the user's checkpoint replaced. */
  public Journal withUser(Checkpoint checkpoint) {
    return new Journal(checkpoint, entries, failure, compensationFailures);
  }

  /** This journal committed to the terminal failure {@code failure}. */
  public Journal withFailure(Outcome failure) {
    return new Journal(user, entries, failure, compensationFailures);
  }

  /** This journal with one more failed attempt at compensating. */
  public Journal withCompensationFailure() {
    return new Journal(user, entries, failure, compensationFailures + 1);
  }

  /**
   * What to store as the record's checkpoint: the user's own when no step was journaled (the form
   * of a key without steps), else the whole journal.
   */
  public Checkpoint toCheckpoint() {
    if (entries.isEmpty() && failure == null) {
      return user;
    }
    return Checkpoint.of(CHECKPOINT_NAME, encode());
  }

  private byte[] encode() {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(256);
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      out.writeByte(VERSION);
      out.writeBoolean(user != null);
      if (user != null) {
        out.writeUTF(user.name());
        writeBytes(out, user.data());
      }
      out.writeBoolean(failure != null);
      if (failure != null) {
        writeBytes(out, failure.body());
      }
      out.writeShort(Math.min(compensationFailures, 0xFFFF));
      out.writeShort(entries.size());
      for (Entry e : entries.values()) {
        out.writeUTF(e.name());
        out.writeByte(e.state().ordinal());
        out.writeBoolean(e.compensable());
        out.writeUTF(e.mediaType());
        writeBytes(out, e.body());
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot happen: writing to memory", e);
    }
    return bytes.toByteArray();
  }

  private static Journal decode(byte[] data) {
    try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(data))) {
      int version = in.readUnsignedByte();
      if (version != 1 && version != VERSION) {
        throw new IllegalStateException("step journal has unknown version " + version);
      }
      Checkpoint user = in.readBoolean() ? Checkpoint.of(in.readUTF(), readBytes(in)) : null;
      Outcome failure = in.readBoolean() ? failureBody(readBytes(in)) : null;
      int compensationFailures = version == 1 ? 0 : in.readUnsignedShort();
      int count = in.readUnsignedShort();
      Map<String, Entry> entries = new LinkedHashMap<>();
      State[] states = State.values();
      for (int i = 0; i < count; i++) {
        String name = in.readUTF();
        int state = in.readUnsignedByte();
        if (state >= states.length) {
          throw new IllegalStateException("step journal has unknown state " + state);
        }
        boolean compensable = version != 1 && in.readBoolean();
        entries.put(name, new Entry(name, states[state], in.readUTF(), readBytes(in),
            compensable));
      }
      return new Journal(user, Collections.unmodifiableMap(entries), failure,
          compensationFailures);
    } catch (IOException e) {
      throw new IllegalStateException("step journal is truncated", e);
    }
  }

  private static void writeBytes(DataOutputStream out, byte[] b) throws IOException {
    out.writeInt(b.length);
    out.write(b);
  }

  private static byte[] readBytes(DataInputStream in) throws IOException {
    int length = in.readInt();
    if (length < 0 || length > in.available()) {
      throw new IllegalStateException("step journal has a bad length " + length);
    }
    return in.readNBytes(length);
  }

  /**
   * The terminal failure {@code failure} as journaled for a FAILED step or a committed failure:
   * {@link Outcome#failure}, its message cut so the whole stays within 1,000 characters.
   */
  static Outcome failureOf(Throwable failure) {
    String type = failure.getClass().getName();
    String message = failure.getMessage() == null ? "" : failure.getMessage();
    int room = Math.max(0, 1000 - type.length() - 1);
    return Outcome.failure(type, message.length() > room ? message.substring(0, room) : message);
  }

  /** The failure a FAILED entry journaled. */
  static Outcome failureOf(Entry entry) {
    return failureBody(entry.body());
  }

  private static Outcome failureBody(byte[] body) {
    return Outcome.of(Outcome.Kind.FAILURE, Outcome.FAILURE_MEDIA_TYPE, body);
  }
}
