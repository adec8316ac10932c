package dev.once.jdbc.internal;

import dev.once.Checkpoint;
import dev.once.IdempotencyKey;
import dev.once.LeaseLostException;
import dev.once.SchemaMissingException;
import dev.once.StoreUnavailableException;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.ClaimRules;
import dev.once.spi.Completion;
import dev.once.spi.EpochMicros;
import dev.once.spi.HeldClaim;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.Outcome;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.function.Supplier;
import javax.sql.DataSource;

/**
 * The JDBC store's algorithm, the same for every dialect.
 *
 * <ul>
 *   <li>Each operation borrows a connection, runs in autocommit unless it needs a transaction, and
 *       returns the connection as it found it (autocommit and isolation restored).
 *   <li>A claim inserts first (one statement, one round trip when the key is new). On conflict it
 *       reads the committed row and decides with {@link ClaimRules#decide}; only a decision that
 *       writes locks the row, decides again and updates, in one short transaction.
 *   <li>Every write after the claim is one conditional UPDATE; no row means the lease was lost.
 *   <li>Deadlocks, serialization failures and busy databases roll back and run again, a bounded
 *       number of times; any other SQLException becomes a {@link StoreUnavailableException}.
 * </ul>
 */
public final class JdbcEngine {

  /** How many times an operation runs when it keeps meeting deadlocks or conflicts. */
  static final int MAX_ATTEMPTS = 8;

  private static final Comparator<IdempotencyKey> KEY_ORDER = Comparator
      .comparing(IdempotencyKey::scope)
      .thenComparing(IdempotencyKey::tenant)
      .thenComparing(IdempotencyKey::key);

  private final DataSource dataSource;
  private final Dialect dialect;
  /** Whether a claim reads or inserts first, learned from this store's claims (PostgreSQL). */
  private final ClaimOrder claimOrder;

  public JdbcEngine(DataSource dataSource, Dialect dialect) {
    this(dataSource, dialect, ClaimOrder.adaptive());
  }

  public JdbcEngine(DataSource dataSource, Dialect dialect, ClaimOrder claimOrder) {
    this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
    this.dialect = Objects.requireNonNull(dialect, "dialect");
    this.claimOrder = Objects.requireNonNull(claimOrder, "claimOrder");
  }

  /** The claim order of this store's lease-mode claims. */
  ClaimOrder claimOrder() {
    return claimOrder;
  }

  /** Where connections come from. */
  public DataSource dataSource() {
    return dataSource;
  }

  /** The SQL this engine speaks. */
  public Dialect dialect() {
    return dialect;
  }

  // --------------------------------------------------------------------------------------------
  // claims

  public Claim claim(ClaimRequest request) {
    ClaimRequest r = normalize(Objects.requireNonNull(request, "request"));
    return run(() -> "claim on " + r.key(), c -> () -> claimOn(c, r));
  }

  /**
   * Insert-first, then decide. Only a decision that writes (a takeover, a retry, a new record over
   * an expired one) locks the row; Replay, InProgress and Mismatch are answered from the committed
   * row just read, which is exact at the instant it was read.
   */
  private Claim claimOn(Connection c, ClaimRequest r) throws SQLException {
    ClaimRules.Decision fresh = ClaimRules.decide(null, r);
    Dialect.FirstStep first = dialect.insertOrRead(c, fresh.next(), claimOrder);
    Claim answered = answeredByFirstStep(fresh, first.inserted(), first.current(), r);
    if (answered != null) {
      return answered;
    }
    Claim claim = dialect.inTransaction(c, () -> {
      IdempotencyRecord current = dialect.lockedRead(c, r.key());
      if (current == null) {
        return null; // deleted (purged) since the insert saw it: start over
      }
      ClaimRules.Decision decision = ClaimRules.decide(current, r);
      if (decision.next() != null) {
        dialect.replace(c, current, decision.next());
      }
      return decision.claim();
    });
    if (claim == null) {
      throw new RetryableConflict("the record of " + r.key() + " was deleted during the claim");
    }
    return claim;
  }

  /**
   * The claim the insert-or-read step settles on its own: Acquired when the row was inserted, or a
   * decision on the committed row that writes nothing (Replay, InProgress, Mismatch). Null when
   * the row must be read under a lock (a decision that writes, or no row visible), the same for
   * both execution modes.
   */
  static Claim answeredByFirstStep(ClaimRules.Decision fresh, boolean inserted,
      IdempotencyRecord current, ClaimRequest r) {
    if (inserted) {
      return fresh.claim();
    }
    if (current != null) {
      ClaimRules.Decision readOnly = ClaimRules.decide(current, r);
      if (readOnly.next() == null) {
        return readOnly.claim();
      }
    }
    return null;
  }

  public List<Claim> claimAll(List<ClaimRequest> requests) {
    return claimAll(requests, null);
  }

  /**
   * As {@link #claimAll(List)}; with a {@code lockWait}, on a database that can bound it
   * ({@link Dialect#limitLockWait}), the batch's transaction gives up once it has waited that long
   * for a row another transaction holds: rolled back, and StoreUnavailableException at once, not
   * retried (the caller makes the requests one by one instead).
   */
  public List<Claim> claimAll(List<ClaimRequest> requests, java.time.Duration lockWait) {
    Objects.requireNonNull(requests, "requests");
    checkLockWait(lockWait);
    if (requests.isEmpty()) {
      return List.of();
    }
    boolean boundedWait = lockWait != null && dialect.canLimitLockWait();
    if (requests.size() == 1 && !boundedWait) {
      return List.of(claim(requests.get(0))); // a single claim waits: a bounded wait takes a batch
    }
    List<ClaimRequest> normalized = new ArrayList<>(requests.size());
    for (ClaimRequest r : requests) {
      normalized.add(normalize(Objects.requireNonNull(r, "request")));
    }
    return run(() -> "claimAll of " + normalized.size() + " keys", c -> () -> {
      Map<IdempotencyKey, IdempotencyRecord> seen = null;
      if (dialect.batchInsertsFirst() && claimOrder.readFirst()) {
        seen = readFirst(c, normalized);
        List<Claim> read = answeredByRead(seen, normalized);
        if (read != null) {
          return read;
        }
      }
      Map<IdempotencyKey, IdempotencyRecord> known = seen;
      if (!boundedWait) {
        return dialect.inTransaction(c, () -> batch(c, normalized, known));
      }
      return boundedLockWait(c, lockWait, () -> batch(c, normalized, known),
          () -> "claimAll of " + normalized.size() + " keys", "claimed");
    });
  }

  /**
   * {@code body} in a transaction that waits at most {@code lockWait} for a row another
   * transaction holds ({@link Dialect#limitLockWait}); one that gave up is rolled back and
   * becomes StoreUnavailableException, not retried and not applied. The session's own lock wait
   * is put back as the transaction's last statement (if it cannot be, nothing is written), and
   * again after a rollback.
   */
  private <T> T boundedLockWait(Connection c, java.time.Duration lockWait,
      SqlWork<T> body, Supplier<String> what, String done) throws SQLException {
    boolean[] limited = {false};
    try {
      return dialect.inTransaction(c, () -> {
        dialect.limitLockWait(c, lockWait);
        limited[0] = true;
        T answer = body.run();
        dialect.endLockWait(c);
        limited[0] = false;
        return answer;
      });
    } catch (SQLException | RuntimeException | Error e) {
      if (limited[0]) {
        try {
          dialect.endLockWait(c); // after the rollback, in autocommit
        } catch (SQLException | RuntimeException notPutBack) {
          e.addSuppressed(notPutBack);
        }
      }
      if (e instanceof SQLException sql) {
        throw gaveUpOr(sql, lockWait, what, done);
      }
      throw e;
    }
  }

  /**
   * {@code e} as it is, unless it is a lock wait that ran out: then StoreUnavailableException,
   * not retried and not applied (the statement or transaction that waited was rolled back).
   */
  private SQLException gaveUpOr(SQLException e, java.time.Duration lockWait,
      Supplier<String> what, String done) {
    if (!dialect.isLockWaitTimeout(e)) {
      return e;
    }
    throw new StoreUnavailableException(what.get() + " gave up after waiting "
        + dialect.lockWaitBound(lockWait).toMillis() + " ms for a row another transaction holds; nothing was "
        + done + " [" + describe(e) + "]", e, false);
  }

  /**
   * A batch's read-first step, in autocommit: one unlocking read of every key. What it met
   * teaches the claim order as one claim would (whether most keys existed): a batch is one
   * choice of order, and a large one must not outweigh the single claims around it.
   */
  private Map<IdempotencyKey, IdempotencyRecord> readFirst(Connection c,
      List<ClaimRequest> requests) throws SQLException {
    List<IdempotencyKey> keys = distinctKeys(requests);
    Map<IdempotencyKey, IdempotencyRecord> seen = dialect.readAll(c, keys);
    claimOrder.record(seen.size() * 2 > keys.size());
    return seen;
  }

  /**
   * The batch answered from the rows its read-first step saw, when every key has a record and no
   * request's decision writes (replays, in-progress and mismatched duplicates, as a re-read
   * partition or retrying clients send): exactly as a single claim answers from the committed
   * row it read. Otherwise null, and the batch runs in a transaction.
   */
  private static List<Claim> answeredByRead(Map<IdempotencyKey, IdempotencyRecord> seen,
      List<ClaimRequest> requests) {
    List<Claim> claims = new ArrayList<>(requests.size());
    for (ClaimRequest r : requests) {
      IdempotencyRecord current = seen.get(r.key());
      if (current == null) {
        return null;
      }
      ClaimRules.Decision decision = ClaimRules.decide(current, r);
      if (decision.next() != null) {
        return null;
      }
      claims.add(decision.claim());
    }
    return claims;
  }

  /** The batch's keys, each once, in request order. */
  private static List<IdempotencyKey> distinctKeys(List<ClaimRequest> requests) {
    Set<IdempotencyKey> keys = new LinkedHashSet<>();
    for (ClaimRequest r : requests) {
      keys.add(r.key());
    }
    return new ArrayList<>(keys);
  }


  /**
   * A batch in one transaction. Keys that exist are read without a lock, and only those whose
   * decision writes are then locked and decided again on the locked row (a replay or an
   * in-progress duplicate writes nothing, as in a single claim); locks are taken in key order so
   * that concurrent batches do not deadlock. Requests are answered in request order, each seeing
   * the ones before it. {@code seen}: the rows the read-first step read (null if it did not run):
   * only the keys it found absent are inserted, and they are not read again.
   */
  private List<Claim> batch(Connection c, List<ClaimRequest> requests,
      Map<IdempotencyKey, IdempotencyRecord> seen) throws SQLException {
    Map<IdempotencyKey, List<ClaimRequest>> byKey = new LinkedHashMap<>();
    for (ClaimRequest r : requests) {
      byKey.computeIfAbsent(r.key(), k -> new ArrayList<>(1)).add(r);
    }
    List<IdempotencyKey> keys = new ArrayList<>(byKey.keySet());
    keys.sort(KEY_ORDER);

    Map<IdempotencyKey, IdempotencyRecord> before = new HashMap<>();
    Set<IdempotencyKey> inserted = new HashSet<>();
    if (dialect.batchInsertsFirst()) {
      Map<IdempotencyKey, IdempotencyRecord> known = seen == null ? new HashMap<>()
          : new HashMap<>(seen);
      List<IdempotencyRecord> fresh = new ArrayList<>(keys.size());
      for (IdempotencyKey k : keys) {
        if (!known.containsKey(k)) {
          fresh.add(ClaimRules.decide(null, byKey.get(k).get(0)).next());
        }
      }
      if (!fresh.isEmpty()) {
        inserted.addAll(dialect.insertAll(c, fresh));
      }
      for (IdempotencyRecord r : fresh) {
        if (inserted.contains(r.key())) {
          before.put(r.key(), r);
        }
      }
      List<IdempotencyKey> rest = new ArrayList<>();
      List<IdempotencyKey> unread = new ArrayList<>();
      if (seen == null) {
        claimOrder.record(inserted.size() * 2 < keys.size()); // one choice, as readFirst's
      }
      for (IdempotencyKey k : keys) {
        if (!inserted.contains(k)) {
          rest.add(k);
          if (!known.containsKey(k)) {
            unread.add(k);
          }
        }
      }
      if (!unread.isEmpty()) {
        known.putAll(dialect.readAll(c, unread));
      }
      List<IdempotencyKey> writing = new ArrayList<>();
      for (IdempotencyKey k : rest) {
        IdempotencyRecord current = known.get(k);
        if (current != null && !writes(current, byKey.get(k))) {
          before.put(k, current); // answered from the committed row: nothing to lock
        } else {
          writing.add(k);
        }
      }
      if (!writing.isEmpty()) {
        Map<IdempotencyKey, IdempotencyRecord> locked = dialect.lockAll(c, writing);
        if (locked.size() != writing.size()) {
          throw new RetryableConflict("a record was deleted during a batch claim");
        }
        before.putAll(locked);
      }
    } else {
      for (IdempotencyKey k : keys) {
        IdempotencyRecord current = dialect.lockedRead(c, k);
        if (current != null) {
          before.put(k, current);
        }
      }
    }

    Map<IdempotencyKey, IdempotencyRecord> after = new HashMap<>(before);
    Set<IdempotencyKey> answered = new HashSet<>();
    List<Claim> claims = new ArrayList<>(requests.size());
    for (ClaimRequest r : requests) {
      if (inserted.contains(r.key()) && answered.add(r.key())) {
        // The first request for the key is the one its fresh record was made from.
        claims.add(ClaimRules.decide(null, r).claim());
        continue;
      }
      ClaimRules.Decision decision = ClaimRules.decide(after.get(r.key()), r);
      claims.add(decision.claim());
      if (decision.next() != null) {
        after.put(r.key(), decision.next());
      }
    }

    for (IdempotencyKey k : keys) {
      IdempotencyRecord old = before.get(k);
      IdempotencyRecord next = after.get(k);
      if (next == old) {
        continue;
      }
      if (old == null) {
        if (!dialect.insertIfAbsent(c, next)) {
          throw new RetryableConflict("a concurrent claim inserted " + k + " during a batch claim");
        }
      } else {
        dialect.replace(c, old, next);
      }
    }
    return claims;
  }

  /** Whether one of a key's requests decides to write over {@code current}. */
  private static boolean writes(IdempotencyRecord current, List<ClaimRequest> requests) {
    for (ClaimRequest r : requests) {
      if (ClaimRules.decide(current, r).next() != null) {
        return true;
      }
    }
    return false;
  }

  // --------------------------------------------------------------------------------------------
  // fenced writes

  public void complete(IdempotencyKey key, long token, Outcome outcome, Instant now,
      Duration retention) {
    Objects.requireNonNull(outcome, "outcome");
    long at = micros(now);
    long expiresAt = EpochMicros.of(EpochMicros.floor(now).plus(EpochMicros.floor(retention)));
    fenced("complete", key, token, dialect.completeSql, ps -> {
      int i = Rows.bindOutcome(ps, 1, outcome);
      ps.setLong(i++, at);
      return dialect.bindExpiry(ps, i, expiresAt);
    }, r -> r.isCompletedAs(token, outcome));
  }

  /**
   * Completes a batch: checked first (nothing written on bad input), then one dialect call on one
   * connection (PostgreSQL: one statement; others: one transaction), run again as a whole after a
   * transient failure.
   *
   * @return the keys whose lease was lost, in request order
   */
  public Set<IdempotencyKey> completeAll(List<Completion> completions, Instant now,
      Duration retention, int maxPayloadBytes, Duration lockWait) {
    Completion.checkBatch(completions, maxPayloadBytes);
    Objects.requireNonNull(retention, "retention");
    checkLockWait(lockWait);
    long at = micros(now);
    if (completions.isEmpty()) {
      return Set.of();
    }
    long expiresAt = EpochMicros.of(EpochMicros.floor(now).plus(EpochMicros.floor(retention)));
    List<Completion> sorted = byKey(completions, Completion::key);
    Supplier<String> what = () -> "completeAll of " + sorted.size() + " keys";
    boolean boundedWait = lockWait != null && dialect.canLimitLockWait();
    Set<IdempotencyKey> lost = run(what, c -> () -> {
      if (!boundedWait) {
        return dialect.completeAll(c, sorted, at, expiresAt);
      }
      if (!dialect.limitsLockWaitInStatement()) {
        return boundedLockWait(c, lockWait,
            () -> dialect.completeAll(c, sorted, at, expiresAt), what, "stored");
      }
      try {
        return dialect.completeAllWithin(c, sorted, at, expiresAt, lockWait);
      } catch (SQLException e) {
        throw gaveUpOr(e, lockWait, what, "stored");
      }
    });
    return inRequestOrder(lost, completions, Completion::key);
  }

  /** A lock wait is positive where there is one (null: the batch waits). */
  private static void checkLockWait(Duration lockWait) {
    if (lockWait != null && (lockWait.isNegative() || lockWait.isZero())) {
      throw new IllegalArgumentException("lockWait must be positive, was " + lockWait);
    }
  }

  /** {@code requests} sorted by key: concurrent batches lock rows in the same order. */
  private static <T> List<T> byKey(List<T> requests, Function<T, IdempotencyKey> key) {
    List<T> sorted = new ArrayList<>(requests);
    sorted.sort(Comparator.comparing(key, KEY_ORDER));
    return sorted;
  }

  /** The keys of {@code lost}, in the order of {@code requests}. */
  private static <T> Set<IdempotencyKey> inRequestOrder(Set<IdempotencyKey> lost,
      List<T> requests, Function<T, IdempotencyKey> key) {
    Set<IdempotencyKey> ordered = new LinkedHashSet<>();
    for (T request : requests) {
      if (lost.contains(key.apply(request))) {
        ordered.add(key.apply(request));
      }
    }
    return ordered;
  }

  public void fail(IdempotencyKey key, long token, String error, Instant now, Duration retention) {
    fail("fail", dialect.failSql, key, token, error, now, retention);
  }

  /** As {@link #fail}, one attempt fewer: the work of the claim released never ran. */
  public void release(IdempotencyKey key, long token, String reason, Instant now,
      Duration retention) {
    fail("release", dialect.releaseSql, key, token, reason, now, retention);
  }

  private void fail(String operation, String sql, IdempotencyKey key, long token, String error,
      Instant now, Duration retention) {
    Objects.requireNonNull(error, "error");
    long at = micros(now);
    long expiresAt = EpochMicros.of(EpochMicros.floor(now).plus(EpochMicros.floor(retention)));
    fenced(operation, key, token, sql, ps -> {
      ps.setString(1, error);
      ps.setLong(2, at);
      return dialect.bindExpiry(ps, 3, expiresAt);
    }, r -> r.isFailedAs(token, error));
  }

  public Instant extend(IdempotencyKey key, long token, Instant now, Duration lease) {
    Objects.requireNonNull(lease, "lease");
    long at = micros(now);
    Instant leaseUntil = EpochMicros.floor(now).plus(EpochMicros.floor(lease));
    long until = EpochMicros.of(leaseUntil);
    fenced("extend", key, token, dialect.extendSql, ps -> {
      ps.setLong(1, until);
      ps.setLong(2, at);
      ps.setLong(3, until);
      return 4;
    }, null);
    return leaseUntil;
  }

  /**
   * Extends a batch of leases on one connection (PostgreSQL: one statement; others: one
   * transaction), run again as a whole after a transient failure.
   *
   * @return the keys whose lease was lost, in request order
   */
  public Set<IdempotencyKey> extendAll(List<HeldClaim> claims, Instant now, Duration lease) {
    Objects.requireNonNull(claims, "claims");
    Objects.requireNonNull(lease, "lease");
    long at = micros(now);
    if (claims.isEmpty()) {
      return Set.of();
    }
    long until = EpochMicros.of(EpochMicros.floor(now).plus(EpochMicros.floor(lease)));
    List<HeldClaim> sorted = byKey(claims, HeldClaim::key);
    Set<IdempotencyKey> lost = run(() -> "extendAll of " + sorted.size() + " keys",
        c -> () -> dialect.extendAll(c, sorted, at, until));
    return inRequestOrder(lost, claims, HeldClaim::key);
  }

  public void checkpoint(IdempotencyKey key, long token, Checkpoint checkpoint, Instant now) {
    Objects.requireNonNull(checkpoint, "checkpoint");
    long at = micros(now);
    fenced("checkpoint", key, token, dialect.checkpointSql, ps -> {
      Rows.string(ps, 1, checkpoint.name());
      Rows.bytes(ps, 2, checkpoint.data());
      ps.setLong(3, at);
      return 4;
    }, null);
  }

  @FunctionalInterface
  private interface Binder {
    /** Binds the SET parameters; returns the index of the first WHERE parameter. */
    int bind(PreparedStatement ps) throws SQLException;
  }

  /**
   * One conditional UPDATE; no matching row means the caller no longer owns the key, unless
   * {@code alreadyDone} (complete, fail; null for extend and checkpoint) says the record is what
   * this very write made of it: the same write re-sent after it was applied, acknowledged. That
   * read happens only on the path where the UPDATE matched nothing.
   */
  private void fenced(String operation, IdempotencyKey key, long token, String sql,
      Binder binder, Predicate<IdempotencyRecord> alreadyDone) {
    Objects.requireNonNull(key, "key");
    run(() -> operation + " on " + key, c -> () -> {
      int rows;
      try (PreparedStatement ps = c.prepareStatement(sql)) {
        int i = Rows.bindKey(ps, binder.bind(ps), key);
        ps.setLong(i, token);
        rows = ps.executeUpdate();
      }
      if (rows > 0) {
        return null;
      }
      if (alreadyDone == null) {
        if (dialect.countsChangedRows() && dialect.owned(c, key, token)) {
          return null; // matched, but the values were already these
        }
        throw new LeaseLostException(key, token);
      }
      // complete and fail always change the status: 0 rows is never "matched but equal".
      IdempotencyRecord current = dialect.read(c, key);
      if (current != null && alreadyDone.test(current)) {
        return null;
      }
      throw new LeaseLostException(key, token);
    });
  }

  // --------------------------------------------------------------------------------------------
  // reads and maintenance

  public Optional<IdempotencyRecord> find(IdempotencyKey key) {
    Objects.requireNonNull(key, "key");
    return run(() -> "find on " + key, c -> () -> {
      try (PreparedStatement ps = c.prepareStatement(dialect.findSql)) {
        Rows.bindKey(ps, 1, key);
        try (ResultSet rs = ps.executeQuery()) {
          return rs.next() ? Optional.of(Rows.read(rs)) : Optional.<IdempotencyRecord>empty();
        }
      }
    });
  }

  public int purgeExpired(Instant now, int limit) {
    long at = micros(now);
    if (limit <= 0) {
      return 0;
    }
    return run(() -> "purgeExpired", c -> () -> dialect.purge(c, at, limit));
  }

  public int reapExpiredLeases(Instant now, int limit) {
    long at = micros(now);
    if (limit <= 0) {
      return 0;
    }
    return run(() -> "reapExpiredLeases", c -> () -> dialect.reap(c, at, limit));
  }

  public void createSchema() {
    run(() -> "createSchema of " + dialect.table, c -> () -> {
      dialect.createSchema(c);
      return null;
    });
  }

  // --------------------------------------------------------------------------------------------
  // connections, retries, time

  @FunctionalInterface
  private interface OnConnection<T> {
    SqlWork<T> on(Connection c);
  }

  /**
   * Runs {@code work} on a borrowed connection in autocommit mode, again after a transient failure
   * (at most {@link #MAX_ATTEMPTS} times), and turns any other SQLException into
   * StoreUnavailableException: {@code mayHaveBeenApplied} false when no connection could be had
   * or the database answered with an error (every write is one autocommit statement or one
   * transaction rolled back on failure), true when the connection was lost under way.
   * {@code operation} names the call in errors, built only when one is thrown: the common path
   * pays no string building per call.
   */
  private <T> T run(Supplier<String> operation, OnConnection<T> work) {
    for (int attempt = 1; ; attempt++) {
      Connection c;
      try {
        c = dataSource.getConnection();
      } catch (SQLException e) {
        throw new StoreUnavailableException(operation.get() + " failed: " + describe(e)
            + "; no connection could be made, nothing was sent", e, false);
      }
      try {
        return onConnection(c, work);
      } catch (SQLException e) {
        if (attempt < MAX_ATTEMPTS && dialect.isTransient(e)) {
          pause(attempt, operation.get(), e);
          continue;
        }
        throw unavailable(operation.get(), e, attempt);
      }
    }
  }

  private StoreUnavailableException unavailable(String operation, SQLException e, int attempt) {
    String hint = dialect.missingSchemaHint(e);
    if (hint != null) {
      return new SchemaMissingException(operation + " failed: " + hint + " [" + describe(e)
          + "]", e);
    }
    return new StoreUnavailableException(operation + " failed: " + describe(e)
        + (attempt > 1 ? " (after " + attempt + " attempts)" : ""), e,
        dialect.mayHaveBeenApplied(e));
  }

  private <T> T onConnection(Connection c, OnConnection<T> work) throws SQLException {
    T result;
    try {
      boolean autoCommit = c.getAutoCommit();
      if (!autoCommit) {
        c.setAutoCommit(true);
      }
      try {
        result = work.on(c).run();
      } finally {
        if (!autoCommit) {
          c.setAutoCommit(false);
        }
      }
    } catch (Throwable t) {
      try {
        c.close();
      } catch (SQLException | RuntimeException e) {
        t.addSuppressed(e);
      }
      throw t;
    }
    try {
      c.close();
    } catch (SQLException | RuntimeException e) {
      // The work committed; failing to hand the connection back does not undo it.
    }
    return result;
  }

  static void pause(int attempt, String operation, SQLException cause) {
    long maxMillis = Math.min(100, 2L << attempt);
    try {
      TimeUnit.MILLISECONDS.sleep(ThreadLocalRandom.current().nextLong(1, maxMillis + 1));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new StoreUnavailableException(operation + " interrupted while retrying after: "
          + describe(cause), cause);
    }
  }

  static String describe(SQLException e) {
    StringBuilder s = new StringBuilder(String.valueOf(e.getMessage()));
    if (e.getSQLState() != null) {
      s.append(" [SQLState ").append(e.getSQLState());
      if (e.getErrorCode() != 0) {
        s.append(", error ").append(e.getErrorCode());
      }
      s.append(']');
    }
    return s.toString();
  }

  private static long micros(Instant now) {
    return EpochMicros.of(Objects.requireNonNull(now, "now"));
  }

  /** The request at microsecond precision (see {@link Micros}): what is decided is what is stored. */
  static ClaimRequest normalize(ClaimRequest r) {
    Instant now = EpochMicros.floor(r.now());
    Duration lease = EpochMicros.floor(r.lease());
    Duration retention = EpochMicros.floor(r.retention());
    if (now.equals(r.now()) && lease.equals(r.lease()) && retention.equals(r.retention())) {
      return r;
    }
    return new ClaimRequest(r.key(), r.fingerprint(), now, lease, retention, r.claimId());
  }
}
