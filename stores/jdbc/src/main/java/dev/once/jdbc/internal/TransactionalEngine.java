package dev.once.jdbc.internal;

import dev.once.Codec;
import dev.once.FailurePolicy;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.OnceListener;
import dev.once.RequestInProgressException;
import dev.once.Result;
import dev.once.SchemaMissingException;
import dev.once.StoreUnavailableException;
import dev.once.internal.CallEvents;
import dev.once.internal.Engine;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.ClaimRules;
import dev.once.spi.EpochMicros;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.Outcome;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import javax.sql.DataSource;

/**
 * Transactional mode: the claim, the business SQL and the outcome commit in one database
 * transaction, so a crash or a retryable failure leaves nothing behind and no lease is needed.
 *
 * <ul>
 *   <li>Claim inside the transaction: insert first (a concurrent claim of the same key, still
 *       uncommitted, makes the insert wait for its end, bounded by the lock wait); on conflict read
 *       the committed record and decide with {@link ClaimRules#decide}; only a decision that writes
 *       (takeover of a lease-mode record) locks the row, decides again and updates it.
 *   <li>Success: {@code UPDATE … COMPLETED}, then the commit. Retryable failure: roll back
 *       everything (our own transaction, or the caller's back to the savepoint before the claim).
 *       Terminal failure: roll back to the savepoint after the claim and store the FAILURE outcome.
 *       A value that cannot be stored: complete with {@link Outcome#notStored}, business writes
 *       kept, in the same transaction.
 *   <li>Our own transactions restart after a deadlock or serialization failure met by the claim,
 *       before the logic ran; nothing is retried once the logic ran.
 * </ul>
 */
public final class TransactionalEngine {

  private static final System.Logger LOG = System.getLogger("dev.once.jdbc.TransactionalOnce");

  /**
   * The lease written into the IN_PROGRESS row. Nobody else ever sees that row committed: it
   * commits COMPLETED or not at all, so the value only matters to the row's own transaction.
   */
  static final Duration LEASE = Duration.ofMinutes(1);

  /** Retry-After of a duplicate answered in progress because a transaction holds the key. */
  static final Duration RETRY_AFTER = Duration.ofSeconds(1);

  /**
   * The settings of one TransactionalOnce.
   *
   * @param retention       how long a completed record is kept and replayed
   * @param failurePolicy   which failures are terminal (stored) rather than retryable
   * @param clock           where time comes from
   * @param maxPayloadBytes the largest outcome stored
   * @param lockWait        how long a duplicate waits for the key's row lock
   * @param listener        who observes, or null
   * @param ticker          where the durations told to the listener come from (nanoseconds)
   */
  public record Settings(Duration retention, FailurePolicy failurePolicy, Clock clock,
      int maxPayloadBytes, Duration lockWait, OnceListener listener,
      java.util.function.LongSupplier ticker) {}

  private final DataSource dataSource;
  private final Dialect dialect;
  private final TxSql sql;
  private final Settings settings;
  private final boolean terminalPossible;
  /** The user's listener, or null; a call's {@link CallEvents} guard every event told to it. */
  private final OnceListener listener;
  /**
   * Whether {@link #call} reads the record before it begins a transaction (PostgreSQL), learned
   * from this engine's own calls; elsewhere always insert-first, in the transaction.
   */
  private final ClaimOrder claimOrder;

  public TransactionalEngine(JdbcEngine engine, Settings settings) {
    this.dataSource = engine.dataSource();
    this.dialect = engine.dialect();
    this.settings = Objects.requireNonNull(settings, "settings");
    this.sql = TxSql.of(dialect, settings.lockWait());
    // Without terminal rules no failure is terminal: then no savepoint after
    // the claim is needed, which saves a round trip where it cannot ride along.
    this.terminalPossible = settings.failurePolicy().hasTerminalRules();
    this.listener = settings.listener();
    this.claimOrder = dialect.kind().equals("POSTGRESQL")
        ? engine.claimOrder().another() : ClaimOrder.fixed(false);
  }

  // ----------------------------------------------------------------------------------------------
  // entry points

  /** Runs {@code work} in a transaction of our own on a connection of the store's DataSource. */
  public <T, X extends Exception> Result<T> call(IdempotencyKey key, Fingerprint fingerprint,
      Codec<T> codec, TxWork<T, X> work) throws X {
    CallEvents events = Engine.startCall(listener, settings.ticker(), key);
    try {
      return callOwn(events, key, fingerprint, codec, work);
    } catch (Throwable t) {
      endCall(events, t);
      throw t;
    }
  }

  /**
   * Ends the call with {@code t} unless an event ended it already (the work's failure, an
   * answer): not run if it never held the claim, else in error.
   */
  private static void endCall(CallEvents events, Throwable t) {
    events.end(events.holdsClaim() ? OnceListener.CallOutcome.ERROR
        : OnceListener.CallOutcome.NOT_RUN, t);
  }

  private <T, X extends Exception> Result<T> callOwn(CallEvents events, IdempotencyKey key,
      Fingerprint fingerprint, Codec<T> codec, TxWork<T, X> work) throws X {
    Connection c;
    try {
      c = dataSource.getConnection();
    } catch (SQLException e) {
      throw unavailable("claim on " + key, e);
    }
    Own scope = new Own(c, events);
    try {
      long started = settings.ticker().getAsLong();
      Result<T> answered = readFirst(scope, key, fingerprint, codec, started);
      if (answered != null) {
        return answered;
      }
      try {
        scope.autoCommit = sql.open(c);
      } catch (SQLException e) {
        scope.broken = true;
        throw unavailable("claim on " + key, e);
      }
      scope.after = terminalPossible ? sql.savepointName(TxSql.AFTER) : null;
      return run(scope, key, fingerprint, codec, work, started);
    } finally {
      scope.close();
    }
  }

  /**
   * While most of this engine's recent calls met a committed record ({@link ClaimOrder}), reads
   * the record before any transaction begins, in autocommit: a replay, a key held by a lease-mode
   * worker or a mismatch is then answered by that one read, with no transaction begun, claimed in
   * and rolled back. Null when the claim must run in the transaction: the order says insert
   * first, the connection is not in autocommit (the read would begin a transaction), no record was
   * seen (a new key, or a concurrent claim not committed yet, which the claim waits for), or the
   * decision writes (a takeover). The claim's one {@code onStoreCall} then includes this read.
   */
  private <T> Result<T> readFirst(Own s, IdempotencyKey key, Fingerprint fingerprint,
      Codec<T> codec, long started) {
    if (!claimOrder.readFirst()) {
      return null;
    }
    ClaimRequest request = JdbcEngine.normalize(new ClaimRequest(key, fingerprint,
        settings.clock().instant(), LEASE, settings.retention()));
    IdempotencyRecord current;
    try {
      if (!s.c.getAutoCommit()) {
        return null;
      }
      current = dialect.read(s.c, key);
    } catch (SQLException e) {
      storeCall(s, "claim", started, false);
      throw unavailable("claim on " + key, e);
    }
    if (current == null) {
      return null; // the claim in the transaction records what it meets
    }
    ClaimRules.Decision decision = ClaimRules.decide(current, request);
    if (decision.next() != null) {
      return null;
    }
    claimOrder.record(true);
    storeCall(s, "claim", started, true);
    return Engine.answer(decision.claim(), key, codec, settings.clock(), s.events);
  }

  /** Runs {@code work} in the caller's ongoing transaction on {@code c}. */
  public <T, X extends Exception> Result<T> callIn(Connection c, IdempotencyKey key,
      Fingerprint fingerprint, Codec<T> codec, TxWork<T, X> work) throws X {
    CallEvents events = Engine.startCall(listener, settings.ticker(), key);
    try {
      return callJoined(events, c, key, fingerprint, codec, work);
    } catch (Throwable t) {
      endCall(events, t);
      throw t;
    }
  }

  private <T, X extends Exception> Result<T> callJoined(CallEvents events, Connection c,
      IdempotencyKey key, Fingerprint fingerprint, Codec<T> codec, TxWork<T, X> work) throws X {
    boolean autoCommit;
    try {
      autoCommit = c.getAutoCommit();
    } catch (SQLException e) {
      throw unavailable("claim on " + key, e);
    }
    if (autoCommit) {
      throw new IllegalStateException("callInTransaction joins the caller's transaction, but the"
          + " connection is in autocommit mode: begin a transaction first (setAutoCommit(false),"
          + " or a Spring-managed transaction), or use call(...) to run in one of our own");
    }
    Joined scope = new Joined(c, events);
    scope.before = sql.savepointName(TxSql.BEFORE);
    scope.after = terminalPossible ? sql.savepointName(TxSql.AFTER) : null;
    return run(scope, key, fingerprint, codec, work, settings.ticker().getAsLong());
  }

  // ----------------------------------------------------------------------------------------------
  // the cycle

  /** The cycle; {@code claimStarted}: when the first claim (and any read before it) began. */
  private <T, X extends Exception> Result<T> run(Scope s, IdempotencyKey key,
      Fingerprint fingerprint, Codec<T> codec, TxWork<T, X> work, long claimStarted)
      throws X {
    Claim claim;
    for (int attempt = 1; ; attempt++) {
      ClaimRequest request = JdbcEngine.normalize(new ClaimRequest(key, fingerprint,
          settings.clock().instant(), LEASE, settings.retention()));
      long started = attempt == 1 ? claimStarted : settings.ticker().getAsLong();
      try {
        s.begin();
        claim = claim(s, request);
        storeCall(s, "claim", started, true);
        break;
      } catch (SQLException e) {
        storeCall(s, "claim", started, false);
        s.undo(e);
        if (sql.isLockTimeout(e) && !(s.broken && s instanceof Joined)) {
          s.events.onInProgress(key);
          RequestInProgressException busy =
              new RequestInProgressException(key, request.now(), RETRY_AFTER);
          busy.initCause(e);
          throw busy;
        }
        if (!s.broken && s.mayRetry(e, attempt)) {
          JdbcEngine.pause(attempt, "claim on " + key, e);
          continue;
        }
        throw unavailable(s, "claim on " + key, e);
      } catch (RuntimeException | Error e) {
        storeCall(s, "claim", started, false);
        s.undo(e);
        throw e;
      }
    }
    if (!(claim instanceof Claim.Acquired acquired)) {
      s.endUnchanged(key);
      return Engine.answer(claim, key, codec, settings.clock(), s.events);
    }

    long token = acquired.token();
    s.events.acquired(acquired);
    long started = settings.ticker().getAsLong();
    T value;
    try {
      value = work.run(s.c, key, token);
    } catch (Throwable failure) {
      recordFailure(s, key, token, failure);
      throw TransactionalEngine.<RuntimeException>sneak(failure);
    }

    Outcome outcome = encodeOrMarker(s, key, token, codec, value);
    try {
      complete(s, key, token, outcome);
    } catch (SQLException e) {
      s.undo(e);
      StoreUnavailableException unavailable = unavailable(s, "complete on " + key, e);
      // As core's engine: the completion (or its commit) failed, the outcome is not known stored.
      s.events.end(OnceListener.CallOutcome.OUTCOME_UNKNOWN, unavailable);
      throw unavailable;
    } catch (StoreUnavailableException e) {
      s.undo(e);
      s.events.end(OnceListener.CallOutcome.OUTCOME_UNKNOWN, e);
      throw e;
    } catch (RuntimeException | Error e) {
      s.undo(e);
      throw e;
    }
    Duration elapsed = Duration.ofNanos(settings.ticker().getAsLong() - started);
    s.events.onCompleted(key, token, elapsed);
    return new Result<>(value, false, token);
  }

  /**
   * The outcome to store for the value the logic returned. The logic ran and its writes are in
   * this transaction: a value that cannot be stored (larger than the bound, or its codec threw)
   * finishes the key with {@link Outcome#notStored} in the same transaction, as lease mode does,
   * so the work commits once and duplicates get {@code OutcomeNotStoredException}.
   */
  private <T> Outcome encodeOrMarker(Scope s, IdempotencyKey key, long token, Codec<T> codec,
      T value) {
    try {
      return Engine.encodeOrNotStored(codec, value, settings.maxPayloadBytes(), key,
          e -> s.events.onOutcomeNotStored(key, token, e));
    } catch (VirtualMachineError e) {
      s.undo(e);
      throw e;
    }
  }

  /**
   * Claims inside the transaction. Inserted: Acquired. Else decide on the committed record; a
   * decision that writes, or a record not visible to this transaction's snapshot, reads it locked
   * and decides again.
   */
  private Claim claim(Scope s, ClaimRequest r) throws SQLException {
    ClaimRules.Decision fresh = ClaimRules.decide(null, r);
    TxSql.First first = sql.insertOrRead(s.c, fresh.next(), s.before, s.after);
    if (s instanceof Own) {
      claimOrder.record(!first.inserted());
    }
    Claim answered =
        JdbcEngine.answeredByFirstStep(fresh, first.inserted(), first.current(), r);
    if (answered != null) {
      return answered;
    }
    IdempotencyRecord locked = sql.lockedRead(s.c, r.key());
    if (locked == null) {
      throw new RetryableConflict("the record of " + r.key() + " was deleted during the claim");
    }
    ClaimRules.Decision decision = ClaimRules.decide(locked, r);
    if (decision.next() != null) {
      dialect.replace(s.c, locked, decision.next());
      if (s.after != null) {
        sql.savepoint(s.c, s.after);
      }
    }
    return decision.claim();
  }

  private void complete(Scope s, IdempotencyKey key, long token, Outcome outcome)
      throws SQLException {
    Instant now = EpochMicros.floor(settings.clock().instant());
    long expiresAt = EpochMicros.of(now.plus(EpochMicros.floor(settings.retention())));
    long started = settings.ticker().getAsLong();
    boolean ok = false;
    s.committing = true;
    try {
      int rows = sql.complete(s.c, key, token, outcome, EpochMicros.of(now), expiresAt,
          s.before, s instanceof Own);
      if (rows == 1) {
        s.ended();
      } else {
        // Cannot happen while the transaction holds the row; never commit without the outcome.
        throw new SQLException("the record of " + key + " is no longer IN_PROGRESS under token "
            + token + " inside its own transaction (" + rows + " rows updated)");
      }
      ok = true;
    } finally {
      storeCall(s, "complete", started, ok);
    }
  }

  /** A failure of the logic: terminal ones are stored, the rest roll everything back. */
  private void recordFailure(Scope s, IdempotencyKey key, long token, Throwable failure) {
    try {
      settleFailure(s, key, token, failure);
    } finally {
      // Settled: the call ends as it came to (after every other event of the call).
      s.events.endFailure();
    }
  }

  private void settleFailure(Scope s, IdempotencyKey key, long token, Throwable failure) {
    boolean terminal = s.after != null && settings.failurePolicy().isTerminal(failure);
    s.events.onFailed(key, token, failure, terminal);
    if (!terminal) {
      s.undo(failure);
      return;
    }
    try {
      sql.rollbackTo(s.c, s.after); // the business writes go, the claim stays
      complete(s, key, token, Outcome.failure(failure));
    } catch (SQLException | RuntimeException e) {
      // The caller's exception stays the one thrown; nothing was stored, a retry runs again.
      s.undo(e);
      RuntimeException why = e instanceof SQLException se
          ? unavailable(s, "storing the terminal failure of " + key, se) : (RuntimeException) e;
      failure.addSuppressed(why);
      if (why instanceof StoreUnavailableException) {
        // Not known stored: the call ends so, not as a stored terminal failure.
        s.events.end(OnceListener.CallOutcome.OUTCOME_UNKNOWN, why);
      }
    }
  }

  // ----------------------------------------------------------------------------------------------
  // where the transaction comes from

  /** The transaction the cycle runs in, and how it ends. */
  private abstract class Scope {
    final Connection c;
    /** Savepoint before the claim (the caller's transaction only). */
    String before;
    /** Savepoint after the claim, when a terminal failure is possible. */
    String after;
    /** The connection's state is unknown: it must not be reused as is. */
    boolean broken;
    /** The completion (and with it, in our own transaction, the commit) is under way. */
    boolean committing;
    /** The listener as this call sees it. */
    final CallEvents events;

    Scope(Connection c, CallEvents events) {
      this.c = c;
      this.events = events;
    }

    /** Starts (again) what the claim runs in. */
    abstract void begin() throws SQLException;

    /** Rolls back everything the cycle did; a failure to do so is added to {@code cause}. */
    abstract void undo(Throwable cause);

    /** Ends a cycle that wrote nothing (replay, in progress, mismatch). */
    abstract void endUnchanged(IdempotencyKey key);

    /** Whether a claim that failed with {@code e} may run again. */
    abstract boolean mayRetry(SQLException e, int attempt);

    /** The completion committed (or released) what the cycle did. */
    void ended() {}
  }

  /** A transaction of our own, on a connection borrowed from the DataSource. */
  private final class Own extends Scope {
    boolean autoCommit;
    /** Begun and neither committed nor rolled back. */
    boolean open;

    Own(Connection c, CallEvents events) {
      super(c, events);
    }

    @Override
    void begin() throws SQLException {
      open = true;
      sql.begin(c);
    }

    @Override
    void undo(Throwable cause) {
      open = false;
      try {
        sql.rollback(c);
      } catch (SQLException | RuntimeException e) {
        broken = true;
        cause.addSuppressed(e);
      }
    }

    @Override
    void endUnchanged(IdempotencyKey key) {
      open = false;
      try {
        sql.rollback(c);
      } catch (SQLException | RuntimeException e) {
        broken = true; // the answer was read from committed data and stands
        LOG.log(System.Logger.Level.DEBUG, "rolling back the read-only claim of " + key, e);
      }
    }

    @Override
    void ended() {
      open = false;
    }

    @Override
    boolean mayRetry(SQLException e, int attempt) {
      return attempt < JdbcEngine.MAX_ATTEMPTS && sql.isTransient(e);
    }

    /** Restores the connection unless its state is unknown, and hands it back. */
    void close() {
      if (open) {
        // Only an unforeseen throwable gets here: never let restoring autocommit commit it.
        try {
          sql.rollback(c);
        } catch (SQLException | RuntimeException e) {
          broken = true;
        }
      }
      if (!broken) {
        try {
          sql.close(c, autoCommit);
        } catch (SQLException | RuntimeException e) {
          LOG.log(System.Logger.Level.DEBUG, "restoring a connection failed", e);
        }
      }
      try {
        c.close(); // a pool rolls back whatever a broken cycle left open
      } catch (SQLException | RuntimeException e) {
        LOG.log(System.Logger.Level.DEBUG, "closing a connection failed", e);
      }
    }
  }

  /** The caller's transaction: savepoints instead of commit and rollback. */
  private final class Joined extends Scope {
    Joined(Connection c, CallEvents events) {
      super(c, events);
    }

    @Override
    void begin() {}

    @Override
    void undo(Throwable cause) {
      try {
        sql.undo(c, before);
      } catch (SQLException | RuntimeException e) {
        broken = true;
        cause.addSuppressed(e);
      }
    }

    @Override
    void endUnchanged(IdempotencyKey key) {
      try {
        sql.release(c, before);
      } catch (SQLException e) {
        throw unavailable("claim on " + key, e);
      }
    }

    @Override
    boolean mayRetry(SQLException e, int attempt) {
      // Only our own conflict: a deadlock may have rolled back the caller's whole transaction.
      return attempt < JdbcEngine.MAX_ATTEMPTS && e instanceof RetryableConflict;
    }
  }

  // ----------------------------------------------------------------------------------------------

  /** A failure before anything was written (no connection, or a read-only answer's end). */
  private StoreUnavailableException unavailable(String operation, SQLException e) {
    if (dialect.missingSchemaHint(e) != null) {
      return new SchemaMissingException(operation + " failed: " + describe(e), e);
    }
    return new StoreUnavailableException(operation + " failed: " + describe(e), e, false);
  }

  /** The database's message, or what to do when the table predates a column the store needs. */
  private String describe(SQLException e) {
    String hint = dialect.missingSchemaHint(e);
    return hint != null ? hint + " [" + JdbcEngine.describe(e) + "]" : JdbcEngine.describe(e);
  }

  /**
   * A failure inside the cycle, after which {@code s} was rolled back. It may have been applied
   * only where a commit of our own was under way when the connection went (PostgreSQL sends the
   * COMMIT with the completion). The caller's transaction is never committed here: the call is
   * undone in it, or, when the message says it is lost, it must be rolled back by the caller.
   */
  private StoreUnavailableException unavailable(Scope s, String operation, SQLException e) {
    String state = String.valueOf(e.getSQLState());
    boolean lost = state.startsWith("08") || state.startsWith("57P") || s.broken;
    String what = s instanceof Joined
        ? "; rolled back to before the claim, the caller's transaction "
            + (lost ? "is lost" : "goes on")
        : lost ? "; the connection was lost: the transaction rolled back, unless the loss came"
            + " during the commit (then a retry replays the outcome)"
        : "; the transaction was rolled back";
    boolean mayHaveBeenApplied = s instanceof Own && s.committing
        && dialect.mayHaveBeenApplied(e);
    if (dialect.missingSchemaHint(e) != null) {
      return new SchemaMissingException(operation + " failed: " + describe(e) + what, e);
    }
    return new StoreUnavailableException(operation + " failed: " + describe(e) + what, e,
        mayHaveBeenApplied);
  }

  private void storeCall(Scope s, String operation, long startedNanos, boolean ok) {
    if (listener != null) {
      Duration elapsed = Duration.ofNanos(settings.ticker().getAsLong() - startedNanos);
      s.events.onStoreCall(operation, elapsed, ok);
    }
  }


  /**
   * Rethrows what the work threw, unwrapped: only its declared {@code X}, unchecked exceptions
   * and errors arrive here, so the caller's {@code throws X} stays truthful.
   */
  @SuppressWarnings("unchecked")
  private static <E extends Throwable> E sneak(Throwable t) throws E {
    throw (E) t;
  }
}
