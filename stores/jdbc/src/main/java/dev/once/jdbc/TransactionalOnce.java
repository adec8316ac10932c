package dev.once.jdbc;

import dev.once.Codec;
import dev.once.FailurePolicy;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.KeyReusedException;
import dev.once.OnceListener;
import dev.once.OutcomeNotStoredException;
import dev.once.ReplayedFailureException;
import dev.once.RequestInProgressException;
import dev.once.Result;
import dev.once.StoreUnavailableException;
import dev.once.support.Checks;
import dev.once.jdbc.internal.TransactionalEngine;
import java.sql.Connection;
import java.time.Clock;
import java.time.Duration;
import java.util.Objects;
import java.util.function.LongSupplier;

/**
 * Transactional mode (docs/architecture.md, "SQL stores and the two execution modes"): the claim of the key, the business SQL and the stored outcome
 * commit in <em>one</em> database transaction. A crash, a lost connection or a retryable exception
 * rolls all of it back and leaves no record, so no lease is needed and there are no zombies; a
 * concurrent duplicate waits on the key's row lock for the original's end (up to
 * {@link Builder#lockWait}) and then replays its outcome. For logic whose effects are all in the
 * same database as the records; for any other side effect use lease mode ({@link dev.once.Once}
 * over the {@link JdbcStore}).
 *
 * <pre>{@code
 * TransactionalOnce once = TransactionalOnce.builder(store)      // same table and dialect as the store
 *     .failurePolicy(FailurePolicy.retryAll().terminalOn(InsufficientFunds.class))
 *     .build();
 * Receipt receipt = once.execute(key, fingerprint, receiptCodec, tx -> {
 *   try (PreparedStatement debit = tx.connection().prepareStatement(
 *       "UPDATE wallets SET balance = balance - ? WHERE id = ?")) {
 *     ...                                                           // business SQL on tx.connection()
 *   }
 *   return new Receipt(...);
 * });
 * }</pre>
 *
 * <p>What each call does: {@code INSERT} the record IN_PROGRESS (the claim), run the logic,
 * {@code UPDATE} it COMPLETED with the outcome, {@code COMMIT}. Answers:
 * <ul>
 *   <li>key already completed: its outcome, decoded ({@link Result#replayed()} true), or
 *       {@link ReplayedFailureException} for a stored terminal failure;
 *   <li>key recorded with another fingerprint: {@link KeyReusedException};
 *   <li>duplicate still running: {@link RequestInProgressException}, when the lock wait ran out (the
 *       original is a transaction, so its end is unknown: {@code leaseUntil} is the time of the
 *       answer and {@code retryAfter} one second), or at once for a live lease-mode claim on the
 *       same table;
 *   <li>retryable failure (by the {@link FailurePolicy}): everything rolled back, no record and no
 *       business rows, and the exception rethrown unchanged (a checked {@code X} included);
 *   <li>terminal failure: the business writes rolled back (to a savepoint after the claim), the
 *       FAILURE outcome stored and committed, the exception rethrown; duplicates get
 *       {@link ReplayedFailureException};
 *   <li>a value that cannot be stored (encoded larger than {@link Builder#maxPayloadBytes}, or
 *       the codec throws): the logic ran, so its business writes commit all the same, with the key
 *       completed by a marker ({@link dev.once.spi.Outcome#notStored}) instead of the value, in
 *       the same transaction; the value is returned and the listener hears
 *       {@link OnceListener#onOutcomeNotStored}. Duplicates get {@link OutcomeNotStoredException}
 *       and never run the logic again (as in lease mode);
 *   <li>database errors: {@link StoreUnavailableException} with the {@link java.sql.SQLException}
 *       as cause, after rolling back. A claim that meets a deadlock or serialization failure in a
 *       transaction of its own runs again (bounded) before the logic ever ran.
 *       {@link StoreUnavailableException#mayHaveBeenApplied()} is true only when the connection
 *       was lost while our own transaction's completion and commit were under way (a retry then
 *       replays, or runs if it did not commit); false when nothing can have committed.
 * </ul>
 * A FAILED or lease-expired IN_PROGRESS record left on the same table by lease mode is taken over
 * (token + 1), as {@link dev.once.spi.ClaimRules#decide} says.
 *
 * <p>Thread-safe; build one per store and share it.
 */
public final class TransactionalOnce {

  /** Default {@link Builder#lockWait}: 5 seconds. */
  public static final Duration DEFAULT_LOCK_WAIT = Duration.ofSeconds(5);
  /** Default {@link Builder#retention}: 24 hours. */
  public static final Duration DEFAULT_RETENTION = Duration.ofHours(24);
  /** Default bound on a stored outcome: 1 MiB (and never more than the store's own bound). */
  public static final int DEFAULT_MAX_PAYLOAD_BYTES = 1 << 20;

  private final JdbcStore store;
  private final Duration lockWait;
  private final TransactionalEngine.Settings settings;
  /** Made on the first call: the store may not know its dialect before (detected then). */
  private volatile TransactionalEngine engine;

  private TransactionalOnce(JdbcStore store, Duration lockWait,
      TransactionalEngine.Settings settings) {
    this.store = store;
    this.lockWait = lockWait;
    this.settings = settings;
  }

  private TransactionalEngine engine() {
    TransactionalEngine e = engine;
    if (e == null) {
      e = new TransactionalEngine(store.engine(), settings);
      engine = e;
    }
    return e;
  }

  /** A builder over {@code store}'s DataSource, dialect and table. */
  public static Builder builder(JdbcStore store) {
    return new Builder(store);
  }

  /**
   * Runs {@code work} once for {@code key} in one transaction of its own, on a connection borrowed
   * from the store's DataSource (begun, committed or rolled back, and handed back with its
   * autocommit mode as found; its isolation level is left as the pool set it), and returns the
   * value. See the class description for every answer.
   *
   * @throws X                          the logic's own exception, unchanged
   * @throws KeyReusedException         the key was used with another fingerprint
   * @throws RequestInProgressException the original is still running
   * @throws ReplayedFailureException   the original failed terminally
   * @throws OutcomeNotStoredException  the original ran, but its value could not be stored
   * @throws StoreUnavailableException  the database failed; the transaction was rolled back
   */
  public <T, X extends Exception> T execute(IdempotencyKey key, Fingerprint fingerprint,
      Codec<T> codec, TransactionalWork<T, X> work) throws X {
    return call(key, fingerprint, codec, work).value();
  }

  /** As {@link #execute}, also telling whether the value was replayed, and the fencing token. */
  public <T, X extends Exception> Result<T> call(IdempotencyKey key, Fingerprint fingerprint,
      Codec<T> codec, TransactionalWork<T, X> work) throws X {
    check(key, fingerprint, codec, work);
    return engine().call(key, fingerprint, codec,
        (c, k, token) -> work.run(new Tx(c, k, token)));
  }

  /**
   * As {@link #call}, but inside the caller's ongoing transaction on {@code connection}, which
   * must have autocommit off. The caller's transaction is never committed nor rolled back as a
   * whole: the claim, the logic and the outcome become part of it and commit when the caller
   * commits (or vanish when it rolls back). Savepoints delimit what this call did:
   * <ul>
   *   <li>retryable failure: rolled back to the savepoint taken <em>before</em> the claim (no
   *       record, no business rows of the logic; the caller's earlier work stays), then rethrown;
   *   <li>terminal failure: rolled back to the savepoint taken <em>after</em> the claim, then the
   *       FAILURE outcome stored, to commit with the caller's transaction; rethrown;
   *   <li>replay, mismatch, in progress, database error: rolled back to before the claim.
   * </ul>
   * The savepoints are released before returning. A database error that ends the whole
   * transaction (a lost connection, a MariaDB deadlock) leaves the caller's transaction lost; the
   * {@link StoreUnavailableException} says so.
   *
   * <p>This is the hook for Spring-managed transactions: inside a {@code @Transactional} method
   * (or a {@code TransactionTemplate}), pass {@code DataSourceUtils.getConnection(dataSource)},
   * the connection bound to the current transaction, and leave it to Spring to commit and release
   * it:
   * <pre>{@code
   * @Transactional
   * public Receipt debit(Event e) {
   *   Connection c = DataSourceUtils.getConnection(dataSource);
   *   return once.callInTransaction(c, key(e), fingerprint(e), codec, tx -> debit(tx, e)).value();
   * }
   * }</pre>
   *
   * @throws IllegalStateException if {@code connection} is in autocommit mode (nothing is done)
   */
  public <T, X extends Exception> Result<T> callInTransaction(Connection connection,
      IdempotencyKey key, Fingerprint fingerprint, Codec<T> codec, TransactionalWork<T, X> work)
      throws X {
    Objects.requireNonNull(connection, "connection");
    check(key, fingerprint, codec, work);
    return engine().callIn(connection, key, fingerprint, codec,
        (c, k, token) -> work.run(new Tx(c, k, token)));
  }

  /** The store whose DataSource, dialect and table this instance uses. */
  public JdbcStore store() {
    return store;
  }

  /** How long a duplicate waits for the original's transaction. */
  public Duration lockWait() {
    return lockWait;
  }

  @Override
  public String toString() {
    return "TransactionalOnce[" + store + ", lockWait " + lockWait + "]";
  }

  private static void check(IdempotencyKey key, Fingerprint fingerprint, Codec<?> codec,
      TransactionalWork<?, ?> work) {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(fingerprint, "fingerprint");
    Objects.requireNonNull(codec, "codec");
    Objects.requireNonNull(work, "work");
  }

  /**
   * Builds a {@link TransactionalOnce}. Defaults: retention 24 h, every failure retryable,
   * outcomes up to 1 MiB (and the store's bound), the system UTC clock, lock wait 5 s, no
   * listener. Each setter validates its argument at once.
   */
  public static final class Builder {
    private final JdbcStore store;
    private Duration retention = DEFAULT_RETENTION;
    private FailurePolicy failurePolicy = FailurePolicy.retryAll();
    private Clock clock = Clock.systemUTC();
    private int maxPayloadBytes = DEFAULT_MAX_PAYLOAD_BYTES;
    private Duration lockWait = DEFAULT_LOCK_WAIT;
    private OnceListener listener;
    private LongSupplier ticker = System::nanoTime;

    private Builder(JdbcStore store) {
      this.store = Objects.requireNonNull(store, "store");
    }

    /** How long a completed record is kept and replayed; after it the key behaves as new. */
    public Builder retention(Duration retention) {
      this.retention = Checks.positive(retention, "retention");
      return this;
    }

    /** Which failures are terminal (stored and replayed) rather than retryable (rolled back). */
    public Builder failurePolicy(FailurePolicy policy) {
      this.failurePolicy = Objects.requireNonNull(policy, "policy");
      return this;
    }

    /** Where time comes from (claim time, retention). */
    public Builder clock(Clock clock) {
      this.clock = Objects.requireNonNull(clock, "clock");
      return this;
    }

    /** The largest outcome stored, in bytes; positive. The store's own bound applies too. */
    public Builder maxPayloadBytes(int bytes) {
      this.maxPayloadBytes = Checks.positive(bytes, "maxPayloadBytes");
      return this;
    }

    /**
     * How long a concurrent duplicate waits for the key's row lock (the original's transaction
     * to end) before it is answered {@link RequestInProgressException}; {@link Duration#ZERO}
     * answers at once. Only the claim's own statements are bounded; the business SQL keeps the
     * session's lock timeout.
     * <ul>
     *   <li>PostgreSQL: {@code SET LOCAL lock_timeout} around the claim (milliseconds, rounded
     *       up; zero is 1 ms, as an {@code INSERT} cannot say {@code NOWAIT}), {@code NOWAIT}
     *       on the locked read of a zero wait;
     *   <li>MariaDB: {@code SET STATEMENT innodb_lock_wait_timeout = n FOR …} on the claim's
     *       statements, in whole seconds rounded up (zero answers at once); MySQL: the session
     *       variable, at least 1 s;
     *   <li>SQLite: not used. Writers are serialised by the database lock, which a transaction
     *       takes first ({@code BEGIN IMMEDIATE}) and waits for up to the connection's
     *       {@code busy_timeout}; then {@link StoreUnavailableException}.
     * </ul>
     */
    public Builder lockWait(Duration lockWait) {
      Objects.requireNonNull(lockWait, "lockWait");
      if (lockWait.isNegative()) {
        throw new IllegalArgumentException("lockWait must not be negative, was " + lockWait);
      }
      this.lockWait = lockWait;
      return this;
    }

    /** Who observes (the same events as lease mode; store calls {@code claim}, {@code complete}). */
    public Builder listener(OnceListener listener) {
      this.listener = Objects.requireNonNull(listener, "listener");
      return this;
    }

    /**
     * Where the durations told to the listener come from, in nanoseconds as
     * {@link System#nanoTime()} (the default), as {@code Once.Builder.ticker}: a test moves it
     * instead of sleeping.
     */
    public Builder ticker(LongSupplier ticker) {
      this.ticker = Objects.requireNonNull(ticker, "ticker");
      return this;
    }

    /** A {@link TransactionalOnce} with these settings. */
    public TransactionalOnce build() {
      int payloadLimit = Math.min(maxPayloadBytes, store.maxPayloadBytes());
      return new TransactionalOnce(store, lockWait, new TransactionalEngine.Settings(retention,
          failurePolicy, clock, payloadLimit, lockWait, listener, ticker));
    }
  }
}
