package dev.once.jdbc.internal;

import dev.once.Checkpoint;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.spi.EpochMicros;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.Outcome;
import dev.once.spi.Status;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;

/** Maps records to and from rows. Column order is {@link #COLUMNS}. */
final class Rows {

  /** Every column, in the order {@link #read} expects. */
  static final String COLUMNS = "scope, tenant, idem_key, status, fingerprint, token, lease_until,"
      + " attempts, checkpoint_name, checkpoint_data, outcome_kind, outcome_media_type,"
      + " outcome_body, last_error, created_at, updated_at, expires_at, claim_id";

  /** How many columns {@link #COLUMNS} names. */
  static final int COUNT = 18;

  /**
   * {@link #COLUMNS} but the six a new claim leaves null (checkpoint, outcome, error), in the
   * order {@link #bindAll} binds them when told the record has none.
   */
  static final String BARE_COLUMNS = "scope, tenant, idem_key, status, fingerprint, token,"
      + " lease_until, attempts, created_at, updated_at, expires_at, claim_id";

  /** How many columns {@link #BARE_COLUMNS} names. */
  static final int BARE_COUNT = 12;

  /** Whether {@code r} has none of the columns {@link #BARE_COLUMNS} leaves out. */
  static boolean bare(IdempotencyRecord r) {
    return r.checkpoint() == null && r.outcome() == null && r.lastError() == null;
  }

  private static final byte[] EMPTY = new byte[0];

  private Rows() {}

  static IdempotencyRecord read(ResultSet rs) throws SQLException {
    return read(rs, 0);
  }

  /** Reads {@link #COLUMNS} starting after {@code offset} leading columns; null if scope is. */
  static IdempotencyRecord read(ResultSet rs, int offset) throws SQLException {
    int o = offset;
    String scope = rs.getString(o + 1);
    if (scope == null) {
      return null;
    }
    IdempotencyKey key = new IdempotencyKey(scope, rs.getString(o + 2), rs.getString(o + 3));
    Status status = status(key, rs.getString(o + 4));
    Fingerprint fingerprint = fingerprint(key, rs.getBytes(o + 5));
    long token = rs.getLong(o + 6);
    long leaseUntil = rs.getLong(o + 7);
    int attempts = rs.getInt(o + 8);
    String checkpointName = rs.getString(o + 9);
    // Some drivers (sqlite-jdbc) read an empty BLOB as NULL: the name or kind says it is there.
    Checkpoint checkpoint = checkpointName == null ? null
        : Checkpoint.of(checkpointName, orEmpty(rs.getBytes(o + 10)));
    String kind = rs.getString(o + 11);
    String mediaType = rs.getString(o + 12);
    Outcome outcome = kind == null ? null
        : Outcome.of(kind(key, kind), mediaType, orEmpty(rs.getBytes(o + 13)));
    String lastError = rs.getString(o + 14);
    // claim_id is 0 for rows written before claim ids existed (the column's default).
    return new IdempotencyRecord(key, status, fingerprint, token, EpochMicros.toInstant(leaseUntil),
        attempts, checkpoint, outcome, lastError, EpochMicros.toInstant(rs.getLong(o + 15)),
        EpochMicros.toInstant(rs.getLong(o + 16)), EpochMicros.toInstant(rs.getLong(o + 17)),
        rs.getLong(o + 18));
  }

  // The table has no CHECK constraints (PostgreSQL compiles them again for every write: schema
  // version 5), so a row changed by hand is refused here, by name, and never acted on.

  private static Status status(IdempotencyKey key, String value) {
    if (value != null) {
      switch (value) {
        case "IN_PROGRESS":
          return Status.IN_PROGRESS;
        case "COMPLETED":
          return Status.COMPLETED;
        case "FAILED":
          return Status.FAILED;
        default:
          break;
      }
    }
    throw notARecord(key, "status '" + value + "'");
  }

  private static Outcome.Kind kind(IdempotencyKey key, String value) {
    switch (value) {
      case "SUCCESS":
        return Outcome.Kind.SUCCESS;
      case "FAILURE":
        return Outcome.Kind.FAILURE;
      default:
        throw notARecord(key, "outcome_kind '" + value + "'");
    }
  }

  private static Fingerprint fingerprint(IdempotencyKey key, byte[] digest) {
    if (digest == null || digest.length != Fingerprint.LENGTH) {
      throw notARecord(key, "a fingerprint of " + (digest == null ? 0 : digest.length)
          + " bytes, not " + Fingerprint.LENGTH);
    }
    return Fingerprint.fromDigest(digest);
  }

  private static IllegalStateException notARecord(IdempotencyKey key, String what) {
    return new IllegalStateException("the row of " + key + " is not a record of Once: it holds "
        + what + ", which no version of the store writes (changed outside the store?); nothing"
        + " was done with it: correct or delete the row");
  }

  /** {@link #COLUMNS}, each prefixed with {@code alias.}. */
  static String columns(String alias) {
    return alias + "." + COLUMNS.replace(", ", ", " + alias + ".");
  }

  /** Binds the three key columns from {@code index} on; returns the next index. */
  static int bindKey(PreparedStatement ps, int index, IdempotencyKey key) throws SQLException {
    ps.setString(index, key.scope());
    ps.setString(index + 1, key.tenant());
    ps.setString(index + 2, key.key());
    return index + 3;
  }

  /** Binds every column of {@link #COLUMNS} from {@code index} on; returns the next index. */
  static int bindAll(PreparedStatement ps, int index, IdempotencyRecord r) throws SQLException {
    return bindAll(ps, index, r, false);
  }

  /**
   * Binds the columns of {@link #BARE_COLUMNS} if {@code bare} (the record must have none of the
   * others: {@link #bare}), else of {@link #COLUMNS}, from {@code index} on; returns the next.
   */
  static int bindAll(PreparedStatement ps, int index, IdempotencyRecord r, boolean bare)
      throws SQLException {
    int i = bindKey(ps, index, r.key());
    ps.setString(i++, r.status().name());
    ps.setBytes(i++, r.fingerprint().digest());
    ps.setLong(i++, r.token());
    ps.setLong(i++, EpochMicros.of(r.leaseUntil()));
    ps.setInt(i++, r.attempts());
    if (!bare) {
      i = bindCheckpoint(ps, i, r);
      i = bindOutcome(ps, i, r);
      string(ps, i++, r.lastError());
    }
    ps.setLong(i++, EpochMicros.of(r.createdAt()));
    ps.setLong(i++, EpochMicros.of(r.updatedAt()));
    ps.setLong(i++, EpochMicros.of(r.expiresAt()));
    ps.setLong(i++, r.claimId());
    return i;
  }

  static int bindCheckpoint(PreparedStatement ps, int i, IdempotencyRecord r) throws SQLException {
    Checkpoint c = r.checkpoint();
    string(ps, i, c == null ? null : c.name());
    bytes(ps, i + 1, c == null ? null : c.data());
    return i + 2;
  }

  static int bindOutcome(PreparedStatement ps, int i, IdempotencyRecord r) throws SQLException {
    return bindOutcome(ps, i, r.outcome());
  }

  static int bindOutcome(PreparedStatement ps, int i, Outcome o) throws SQLException {
    string(ps, i, o == null ? null : o.kind().name());
    string(ps, i + 1, o == null ? null : o.mediaType());
    bytes(ps, i + 2, o == null ? null : o.body());
    return i + 3;
  }

  static void string(PreparedStatement ps, int i, String s) throws SQLException {
    if (s == null) {
      ps.setNull(i, Types.VARCHAR);
    } else {
      ps.setString(i, s);
    }
  }

  static void bytes(PreparedStatement ps, int i, byte[] b) throws SQLException {
    if (b == null) {
      ps.setNull(i, Types.BINARY);
    } else {
      ps.setBytes(i, b);
    }
  }

  private static byte[] orEmpty(byte[] b) {
    return b == null ? EMPTY : b;
  }
}
