package dev.once.jdbc;

import dev.once.Checkpoint;
import dev.once.IdempotencyKey;
import dev.once.StoreUnavailableException;
import dev.once.support.Checks;
import dev.once.jdbc.internal.ClaimOrder;
import dev.once.jdbc.internal.Dialect;
import dev.once.jdbc.internal.JdbcEngine;
import dev.once.jdbc.internal.SqliteFiles;
import dev.once.jdbc.internal.TableName;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.Completion;
import dev.once.spi.HeldClaim;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.IdempotencyStore;
import dev.once.spi.Outcome;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import javax.sql.DataSource;

/**
 * An {@link IdempotencyStore} in a relational database, over any {@link DataSource} (a pool such as
 * HikariCP in production). PostgreSQL, MariaDB/MySQL and SQLite; see {@link JdbcDialect}.
 *
 * <p>Why a relational store: the records then live next to the business data, with the database's
 * durability and backups. A claim is one atomic step: an {@code INSERT} that only succeeds for a
 * new key (one round trip), and only on conflict a read, the decision of
 * {@link dev.once.spi.ClaimRules#decide} and, if it writes, a locked read and an update in one
 * short transaction. On PostgreSQL, while most recent claims met an existing key, a claim reads
 * first instead, so that a duplicate is one round trip too. Every later write is one conditional
 * {@code UPDATE} on the fencing token.
 *
 * <pre>{@code
 * JdbcStore store = JdbcStore.builder(dataSource)      // dialect detected on the first call
 *     .table("once_records")
 *     .build();
 * store.createSchema();                                // or apply JdbcDialect.schema(table) yourself
 * }</pre>
 *
 * <p>The store never creates tables on its own: call {@link #createSchema()} or run the DDL of
 * {@link JdbcDialect#schema(String)} with your migrations. Times are stored as epoch microseconds
 * (instants are floored to the microsecond). Every database error becomes a
 * {@link StoreUnavailableException}; deadlocks and serialization failures are retried a few times
 * first; {@link StoreUnavailableException#mayHaveBeenApplied()} is false unless the connection
 * was lost while a write or commit was under way. A re-sent claim (same
 * {@link ClaimRequest#claimId}) finds its own claim, and a completion or failure repeated after it
 * was applied is acknowledged. {@link Builder#build()} never connects, so the store can be built
 * while its database is down. Thread-safe. Closing the store leaves the caller's DataSource open.
 */
public final class JdbcStore implements IdempotencyStore {

  /** The table name used unless {@link Builder#table} says otherwise. */
  public static final String DEFAULT_TABLE = "once_records";

  private final DataSource dataSource;
  private final String table;
  private final int maxPayloadBytes;
  private final ClaimOrder claimOrder;
  /** Null until the dialect is known: detected by the first call that needs the database. */
  private volatile JdbcEngine engine;

  private JdbcStore(DataSource dataSource, String table, JdbcEngine engine, int maxPayloadBytes,
      ClaimOrder claimOrder) {
    this.dataSource = dataSource;
    this.table = table;
    this.engine = engine;
    this.maxPayloadBytes = maxPayloadBytes;
    this.claimOrder = claimOrder;
  }

  /** Starts a store over {@code dataSource}. */
  public static Builder builder(DataSource dataSource) {
    return new Builder(dataSource);
  }

  /**
   * A store in the SQLite file {@code file} (created if missing), table {@value #DEFAULT_TABLE},
   * over {@link #sqliteDataSource(Path)}. Call {@link #createSchema()} once before use. Needs
   * {@code org.xerial:sqlite-jdbc} on the classpath.
   */
  public static JdbcStore sqlite(Path file) {
    return builder(sqliteDataSource(file)).dialect(JdbcDialect.SQLITE).build();
  }

  /**
   * A DataSource over the SQLite file {@code file} configured as the store needs it: WAL journal
   * (readers never block the writer), a 5 s busy timeout (writers queue for the lock instead of
   * failing), synchronous=FULL. Each {@code getConnection()} opens the file; wrap it in a pool for
   * high throughput. Needs {@code org.xerial:sqlite-jdbc} on the classpath.
   */
  public static DataSource sqliteDataSource(Path file) {
    return SqliteFiles.dataSource(Objects.requireNonNull(file, "file"));
  }

  /** Configures a {@link JdbcStore}. */
  public static final class Builder {
    private final DataSource dataSource;
    private JdbcDialect dialect;
    private String table = DEFAULT_TABLE;
    private Integer maxPayloadBytes;
    private ClaimOrder claimOrder = ClaimOrder.adaptive();

    private Builder(DataSource dataSource) {
      this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
    }

    /**
     * The database's dialect. Without it the store asks the database ({@code DatabaseMetaData},
     * one connection) on its first call, so that {@link #build()} never needs the database; name
     * it to skip that round trip and to have the dialect's payload bound by default.
     */
    public Builder dialect(JdbcDialect dialect) {
      this.dialect = Objects.requireNonNull(dialect, "dialect");
      return this;
    }

    /**
     * The table, default {@value JdbcStore#DEFAULT_TABLE}: an unquoted identifier
     * ({@code [A-Za-z_][A-Za-z0-9_]*}, at most 40 characters), optionally {@code schema.table}
     * (not for SQLite). It is spliced into SQL, so anything else is rejected.
     *
     * @throws IllegalArgumentException if the name is not such an identifier
     */
    public Builder table(String table) {
      TableName.of(table);
      this.table = table;
      return this;
    }

    /**
     * The largest outcome or checkpoint body the store accepts (default
     * {@link JdbcDialect#defaultMaxPayloadBytes()} of the dialect given to {@link #dialect}; without
     * one, the smallest of them, MariaDB's, since the store cannot know its database before its
     * first call). {@code Once} refuses larger payloads with {@code PayloadTooLargeException}
     * before they reach the database. For MariaDB/MySQL keep it under half the server's
     * {@code max_allowed_packet}.
     */
    public Builder maxPayloadBytes(int bytes) {
      this.maxPayloadBytes = Checks.positive(bytes, "maxPayloadBytes");
      return this;
    }

    /** Tests: a fixed claim order, so that each path runs whatever the stream of claims. */
    Builder claimOrder(ClaimOrder order) {
      this.claimOrder = Objects.requireNonNull(order, "order");
      return this;
    }

    /**
     * The store. Never connects: it applies no DDL, and without a {@link #dialect} the dialect is
     * detected by the store's first call (which reports an unreachable database as
     * {@link StoreUnavailableException}, as every later call does). A database that is down
     * while the application starts therefore does not stop it.
     *
     * @throws IllegalArgumentException if the table name does not suit the dialect given
     */
    public JdbcStore build() {
      if (dialect == null) {
        return new JdbcStore(dataSource, table, null,
            maxPayloadBytes != null ? maxPayloadBytes : JdbcDialect.MARIADB.defaultMaxPayloadBytes(),
            claimOrder);
      }
      TableName name = dialect.validate(table);
      Dialect support = Dialect.of(dialect.name(), dialect.schemaResources(), name);
      return new JdbcStore(dataSource, name.qualified(),
          new JdbcEngine(dataSource, support, claimOrder),
          maxPayloadBytes != null ? maxPayloadBytes : dialect.defaultMaxPayloadBytes(),
          claimOrder);
    }
  }

  /**
   * The engine, for {@link TransactionalOnce}: the same DataSource, dialect and table. Detects the
   * dialect first if it was not given (racing first calls may each detect it; same answer).
   *
   * @throws StoreUnavailableException if the dialect must be detected and no connection can be
   *                                   made (nothing was written)
   * @throws IllegalArgumentException  if the database is none of the three, or the table name does
   *                                   not suit it
   */
  JdbcEngine engine() {
    JdbcEngine e = engine;
    if (e == null) {
      JdbcDialect detected = JdbcDialect.detect(dataSource);
      e = new JdbcEngine(dataSource, Dialect.of(detected.name(), detected.schemaResources(),
          detected.validate(table)), claimOrder);
      engine = e;
    }
    return e;
  }

  /**
   * The dialect this store speaks; asks the database if it was not given and no call has
   * detected it yet.
   *
   * @throws StoreUnavailableException if it must be detected and no connection can be made
   */
  public JdbcDialect dialect() {
    return JdbcDialect.valueOf(engine().dialect().kind());
  }

  /** The table this store uses. */
  public String table() {
    return table;
  }

  /**
   * Creates the table and its indexes if they do not exist ({@link JdbcDialect#schema(String)}),
   * and upgrades a table made by an earlier version: adds the {@code claim_id} column where it is
   * missing, and on PostgreSQL applies version 3 where it is missing (the {@code purge_after}
   * column and its index in place of the index on {@code expires_at}) and gives rows written before
   * it their {@code purge_after}, in batches of 5,000 rows. Each step is looked up first, so an
   * up-to-date table is never altered. Idempotent; safe to call at every start. Never called
   * implicitly; a store over a table that lacks a column fails its claims with a
   * {@link dev.once.SchemaMissingException} that says to call this.
   *
   * @throws StoreUnavailableException if the DDL fails (permissions, connection)
   */
  public void createSchema() {
    engine().createSchema();
  }

  @Override
  public Claim claim(ClaimRequest request) {
    return engine().claim(request);
  }

  /**
   * Claims a batch in one transaction. PostgreSQL inserts every new key with one statement and
   * locks the existing ones with another; the others lock key by key. Rows are locked in key order
   * so concurrent batches do not deadlock; answers come in request order, and a key requested twice
   * is answered in order (the second sees the first's claim).
   */
  @Override
  public List<Claim> claimAll(List<ClaimRequest> requests) {
    return engine().claimAll(requests);
  }

  /**
   * As {@link #claimAll(List)}; on PostgreSQL and MariaDB the batch's transaction waits at most
   * {@code lockWait} for any row another transaction holds (a {@link TransactionalOnce} call in
   * progress, a claim not yet committed), then rolls back and throws
   * {@link dev.once.StoreUnavailableException} at once, without retrying. PostgreSQL bounds it
   * with {@code SET LOCAL lock_timeout}; MariaDB with the session's
   * {@code innodb_lock_wait_timeout}, rounded up to whole seconds, and puts the session's own
   * value back after the batch. SQLite waits as {@link #claimAll(List)} does (it holds the whole
   * database, not rows).
   */
  @Override
  public List<Claim> claimAll(List<ClaimRequest> requests, java.time.Duration lockWait) {
    return engine().claimAll(requests, java.util.Objects.requireNonNull(lockWait, "lockWait"));
  }

  /**
   * {@inheritDoc}
   *
   * <p>PostgreSQL: one {@code UPDATE … FROM unnest(…) RETURNING} statement, one round trip.
   * MariaDB/MySQL and SQLite: one JDBC batch in one transaction. Either way all or none of the
   * batch is written when the call throws.
   */
  @Override
  public Set<IdempotencyKey> completeAll(List<Completion> completions, Instant now,
      Duration retention) {
    return engine().completeAll(completions, now, retention, maxPayloadBytes, null);
  }

  /**
   * As {@link #completeAll(List, Instant, Duration)}, waiting at most {@code lockWait} for a row
   * another transaction holds (a {@link TransactionalOnce} duplicate of a key in progress holds
   * it until its caller's transaction ends), then throwing
   * {@link dev.once.StoreUnavailableException} without retrying, with nothing stored. On
   * PostgreSQL the batch's one {@code UPDATE} is preceded by
   * {@code SELECT set_config('lock_timeout', …, true)}, sent with it in one round trip and one
   * implicit transaction, so a table lock is bounded too and the session's own setting is back
   * after it. On MariaDB the batch runs in a transaction under the session's
   * {@code innodb_lock_wait_timeout}, in whole seconds, as for
   * {@link #claimAll(List, java.time.Duration)}; its statements are sent together, so each held
   * row is waited for that long: a batch that meets {@code k} held rows gives up after
   * {@code k} seconds. SQLite waits as {@link #completeAll(List, Instant, Duration)} does.
   */
  @Override
  public Set<IdempotencyKey> completeAll(List<Completion> completions, Instant now,
      Duration retention, Duration lockWait) {
    return engine().completeAll(completions, now, retention, maxPayloadBytes,
        java.util.Objects.requireNonNull(lockWait, "lockWait"));
  }

  @Override
  public void complete(IdempotencyKey key, long token, Outcome outcome, Instant now,
      Duration retention) {
    engine().complete(key, token, outcome, now, retention);
  }

  @Override
  public void fail(IdempotencyKey key, long token, String error, Instant now, Duration retention) {
    engine().fail(key, token, error, now, retention);
  }

  /** One statement on PostgreSQL, one batch in one transaction on MariaDB and SQLite. */
  @Override
  public Set<IdempotencyKey> extendAll(List<HeldClaim> claims, Instant now, Duration lease) {
    return engine().extendAll(claims, now, lease);
  }

  @Override
  public void release(IdempotencyKey key, long token, String reason, Instant now,
      Duration retention) {
    engine().release(key, token, reason, now, retention);
  }

  @Override
  public Instant extend(IdempotencyKey key, long token, Instant now, Duration lease) {
    return engine().extend(key, token, now, lease);
  }

  @Override
  public void checkpoint(IdempotencyKey key, long token, Checkpoint checkpoint, Instant now) {
    engine().checkpoint(key, token, checkpoint, now);
  }

  @Override
  public Optional<IdempotencyRecord> find(IdempotencyKey key) {
    return engine().find(key);
  }

  @Override
  public int purgeExpired(Instant now, int limit) {
    return engine().purgeExpired(now, limit);
  }

  @Override
  public int reapExpiredLeases(Instant now, int limit) {
    return engine().reapExpiredLeases(now, limit);
  }

  @Override
  public int maxPayloadBytes() {
    return maxPayloadBytes;
  }

  /**
   * {@inheritDoc}
   *
   * <p>On PostgreSQL, the pool's size where the DataSource tells it (HikariCP's
   * {@code getMaximumPoolSize()}), else 8: up to that many callers
   * each call alone, as without coalescing; beyond it they would wait for a connection anyway,
   * and a batch of claims or of completions is one statement and one commit, which gives up on a
   * row another transaction holds after its {@code lockWait}. 0 on MariaDB/MySQL, which bounds
   * that wait in whole seconds only, and on SQLite, which has one writer at a time and cannot
   * bound it: there a batch would hold up all of its callers for one held key. -1 while the
   * dialect was neither given nor detected yet (this never connects; the first call that needs
   * the database detects it).
   */
  @Override
  public int defaultCoalescing() {
    JdbcEngine e = engine;
    if (e == null) {
      return -1;
    }
    if (!e.dialect().coalescingPays()) {
      return 0;
    }
    int pool = poolSize(dataSource);
    return pool > 0 ? pool : CALLS_ALONE_UNKNOWN_POOL;
  }

  /** Calls alone where the pool's size is not known: a common pool's size. */
  static final int CALLS_ALONE_UNKNOWN_POOL = 8;

  /**
   * The most connections {@code dataSource} opens, if it says so through a public
   * {@code int getMaximumPoolSize()} of a public class (HikariCP's, read without a dependency on
   * it), else 0. Reads its configuration: no connection. HikariCP before 7 answers -1 until its
   * pool has started when nothing set the size (a pool built with setters): 0 here, so 8 from
   * the caller.
   */
  static int poolSize(DataSource dataSource) {
    try {
      java.lang.reflect.Method size = dataSource.getClass().getMethod("getMaximumPoolSize");
      if (size.getReturnType() == int.class) {
        int n = (int) size.invoke(dataSource);
        return Math.max(n, 0);
      }
    } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
      // not a pool that says (a LinkageError: getMethod resolves every public method's types,
      // and one may name a class of an optional dependency that is not there): the default
    }
    return 0;
  }

  /** Leaves the DataSource open: it belongs to the caller. */
  @Override
  public void close() {}

  @Override
  public String toString() {
    JdbcEngine e = engine;
    return "JdbcStore[" + (e != null ? e.dialect().kind() : "dialect detected on first call")
        + ", " + table + "]";
  }
}
