package dev.once.spring;

import dev.once.Once;
import dev.once.jdbc.JdbcDialect;
import dev.once.jdbc.JdbcStore;
import dev.once.jdbc.TransactionalOnce;
import dev.once.servlet.IdempotencyFilter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.util.unit.DataSize;

/**
 * The {@code once.*} properties. They only feed the core builders ({@link Once.Builder},
 * {@link JdbcStore.Builder}, {@link TransactionalOnce.Builder}, {@link IdempotencyFilter.Builder});
 * every default is the builder's own. (The filter's defaults are spelled out here rather than read
 * from {@link IdempotencyFilter}, so that binding never loads Servlet classes in an application
 * without them.)
 */
@ConfigurationProperties(prefix = "once")
public class OnceProperties {

  /** Which store the auto-configuration makes when the context has no IdempotencyStore bean. */
  public enum StoreType {
    /** A DataSource → JDBC; else a Lettuce client → Redis; else in memory (with a warning). */
    AUTO,
    /** The JdbcStore over the context's DataSource; fails at startup without one. */
    JDBC,
    /** The RedisStore over the context's Lettuce client; fails at startup without one. */
    REDIS,
    /** The in-memory store: one JVM, tests. */
    MEMORY
  }

  /** Which store to make: auto, jdbc, redis or memory. */
  private StoreType store = StoreType.AUTO;

  /** How long a claim is honoured before another worker may take over. */
  private Duration lease = Once.Builder.DEFAULT_LEASE;

  /** How long a finished record is kept and replayed; after it the key is new. */
  private Duration retention = Once.Builder.DEFAULT_RETENTION;

  /**
   * How long a duplicate waits for the original to finish, then replays it (or takes over a lease
   * that passed). 0 answers at once: RequestInProgressException, HTTP 409.
   */
  private Duration inProgressWait = Duration.ZERO;

  /** The largest outcome or checkpoint stored (also bounded by the store). */
  private DataSize maxPayload = DataSize.ofBytes(Once.Builder.DEFAULT_MAX_PAYLOAD_BYTES);

  /**
   * Extend the lease of running logic every third of the lease, so a method that runs longer
   * than the lease is not taken over while it runs: one store write per running call every
   * lease/3 (10 s by default), none while nothing runs.
   */
  private boolean heartbeat = true;

  private final Maintenance maintenance = new Maintenance();
  private final Jdbc jdbc = new Jdbc();
  private final Redis redis = new Redis();
  private final Http http = new Http();
  private final Metrics metrics = new Metrics();
  private final Observations observations = new Observations();

  public StoreType getStore() {
    return store;
  }

  public void setStore(StoreType store) {
    this.store = store;
  }

  public Duration getLease() {
    return lease;
  }

  public void setLease(Duration lease) {
    this.lease = lease;
  }

  public Duration getRetention() {
    return retention;
  }

  public void setRetention(Duration retention) {
    this.retention = retention;
  }

  public Duration getInProgressWait() {
    return inProgressWait;
  }

  public void setInProgressWait(Duration inProgressWait) {
    this.inProgressWait = inProgressWait;
  }

  public DataSize getMaxPayload() {
    return maxPayload;
  }

  public void setMaxPayload(DataSize maxPayload) {
    this.maxPayload = maxPayload;
  }

  public boolean isHeartbeat() {
    return heartbeat;
  }

  public void setHeartbeat(boolean heartbeat) {
    this.heartbeat = heartbeat;
  }

  public Maintenance getMaintenance() {
    return maintenance;
  }

  public Jdbc getJdbc() {
    return jdbc;
  }

  public Redis getRedis() {
    return redis;
  }

  public Http getHttp() {
    return http;
  }

  public Metrics getMetrics() {
    return metrics;
  }

  public Observations getObservations() {
    return observations;
  }

  /** {@code once.maintenance.*}: purging expired records and reaping stale leases. */
  public static class Maintenance {
    /** Run dev.once.Maintenance (reap, then purge, in bounded batches) periodically. */
    private boolean enabled = true;
    /** How often. */
    private Duration interval = Duration.ofMinutes(5);

    public boolean isEnabled() {
      return enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    public Duration getInterval() {
      return interval;
    }

    public void setInterval(Duration interval) {
      this.interval = interval;
    }
  }

  /** The databases of {@code once.jdbc.dialect}, each naming a {@link JdbcDialect}. */
  public enum Dialect {
    /** PostgreSQL 12 or later. */
    POSTGRESQL(JdbcDialect.POSTGRESQL),
    /** MariaDB 10.5 or later. */
    MARIADB(JdbcDialect.MARIADB),
    /** MySQL 8 (InnoDB): the MariaDB dialect. */
    MYSQL(JdbcDialect.MARIADB),
    /** SQLite 3.24 or later. */
    SQLITE(JdbcDialect.SQLITE);

    private final JdbcDialect jdbc;

    Dialect(JdbcDialect jdbc) {
      this.jdbc = jdbc;
    }

    /** The store's dialect. */
    public JdbcDialect jdbc() {
      return jdbc;
    }
  }

  /** {@code once.jdbc.*}: the JdbcStore and transactional mode. */
  public static class Jdbc {
    /** The records table: an unquoted identifier, optionally schema-qualified. */
    private String table = JdbcStore.DEFAULT_TABLE;
    /**
     * The database: postgresql, mariadb, mysql or sqlite. Unset: detected from the driver on the
     * store's first call (never at startup).
     */
    private Dialect dialect;
    /** Apply the dialect's DDL (CREATE TABLE IF NOT EXISTS) at startup. */
    private boolean createSchema;
    /**
     * In transactional mode, how long a duplicate waits on the original's transaction before it is
     * answered in progress. 0 answers at once.
     */
    private Duration lockWait = TransactionalOnce.DEFAULT_LOCK_WAIT;

    public String getTable() {
      return table;
    }

    public void setTable(String table) {
      this.table = table;
    }

    public Dialect getDialect() {
      return dialect;
    }

    public void setDialect(Dialect dialect) {
      this.dialect = dialect;
    }

    public boolean isCreateSchema() {
      return createSchema;
    }

    public void setCreateSchema(boolean createSchema) {
      this.createSchema = createSchema;
    }

    public Duration getLockWait() {
      return lockWait;
    }

    public void setLockWait(Duration lockWait) {
      this.lockWait = lockWait;
    }
  }

  /** {@code once.redis.*}: the RedisStore. */
  public static class Redis {
    /** What every key of the store starts with. */
    private String keyPrefix = "once:";
    /** The longest any store call waits for Redis. */
    private Duration commandTimeout = Duration.ofSeconds(2);

    public String getKeyPrefix() {
      return keyPrefix;
    }

    public void setKeyPrefix(String keyPrefix) {
      this.keyPrefix = keyPrefix;
    }

    public Duration getCommandTimeout() {
      return commandTimeout;
    }

    public void setCommandTimeout(Duration commandTimeout) {
      this.commandTimeout = commandTimeout;
    }
  }

  /**
   * {@code once.http.*}: the Idempotency-Key filter, the servlet filter in a servlet web
   * application, the WebFlux filter in a reactive one (the same settings).
   */
  public static class Http {
    /**
     * Register the IdempotencyFilter in a servlet web application (the IdempotencyWebFilter in a
     * reactive one, with once-webflux).
     */
    private boolean enabled = true;
    /** The HTTP methods protected. */
    private List<String> methods = new ArrayList<>(List.of("POST", "PATCH"));
    /** The paths protected: /charges, /charges/* (one segment), /payments/** (any depth). */
    private List<String> paths = new ArrayList<>(List.of("/**"));
    /** Paths left unprotected although a protected pattern matches them. */
    private List<String> excludePaths = new ArrayList<>();
    /** The scope of every key the filter claims. */
    private String scope = "http";
    /** An API-key header whose value (its SHA-256) is the tenant; requests without it get 403. */
    private String tenantHeader;
    /** The authenticated principal's name is the tenant; requests without one get 403. */
    private boolean tenantPrincipal;
    /** The request header carrying the key. */
    private String keyHeader = "Idempotency-Key";
    /** Refuse protected requests without a key (400); false lets them through unprotected. */
    private boolean keyRequired = true;
    /** Store and replay 5xx responses (Stripe does) instead of releasing the key for a retry. */
    private boolean storeServerErrors;
    /** The largest request body read and fingerprinted; larger requests get 413. */
    private DataSize maxRequestBytes = DataSize.ofMegabytes(1);
    /** The largest response body stored; default: the max payload. */
    private DataSize maxResponseBytes;
    /** The response headers stored and replayed. */
    private List<String> replayHeaders = new ArrayList<>(List.of("Content-Type",
        "Content-Language", "Content-Location", "Location", "ETag", "Last-Modified", "Link"));
    /** Further headers never stored nor replayed (Set-Cookie and Authorization never are). */
    private List<String> neverStoreHeaders = new ArrayList<>();
    /** How long a 409 asks the client to wait (Retry-After), capped by the lease left. */
    private Duration retryAfter = Duration.ofSeconds(1);
    /**
     * The filter's order: 0 runs after Spring Security's filter chain (-100; its
     * WebFilterChainProxy in a reactive application).
     */
    private int filterOrder;
    /**
     * Answer Once's exceptions out of Spring MVC handlers (@Idempotent methods) as
     * application/problem+json: 422, 409, 503, ... (IdempotentExceptionHandler).
     */
    private boolean problemDetails = true;

    public boolean isEnabled() {
      return enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    public List<String> getMethods() {
      return methods;
    }

    public void setMethods(List<String> methods) {
      this.methods = methods;
    }

    public List<String> getPaths() {
      return paths;
    }

    public void setPaths(List<String> paths) {
      this.paths = paths;
    }

    public List<String> getExcludePaths() {
      return excludePaths;
    }

    public void setExcludePaths(List<String> excludePaths) {
      this.excludePaths = excludePaths;
    }

    public String getScope() {
      return scope;
    }

    public void setScope(String scope) {
      this.scope = scope;
    }

    public String getTenantHeader() {
      return tenantHeader;
    }

    public void setTenantHeader(String tenantHeader) {
      this.tenantHeader = tenantHeader;
    }

    public boolean isTenantPrincipal() {
      return tenantPrincipal;
    }

    public void setTenantPrincipal(boolean tenantPrincipal) {
      this.tenantPrincipal = tenantPrincipal;
    }

    public String getKeyHeader() {
      return keyHeader;
    }

    public void setKeyHeader(String keyHeader) {
      this.keyHeader = keyHeader;
    }

    public boolean isKeyRequired() {
      return keyRequired;
    }

    public void setKeyRequired(boolean keyRequired) {
      this.keyRequired = keyRequired;
    }

    public boolean isStoreServerErrors() {
      return storeServerErrors;
    }

    public void setStoreServerErrors(boolean storeServerErrors) {
      this.storeServerErrors = storeServerErrors;
    }

    public DataSize getMaxRequestBytes() {
      return maxRequestBytes;
    }

    public void setMaxRequestBytes(DataSize maxRequestBytes) {
      this.maxRequestBytes = maxRequestBytes;
    }

    public DataSize getMaxResponseBytes() {
      return maxResponseBytes;
    }

    public void setMaxResponseBytes(DataSize maxResponseBytes) {
      this.maxResponseBytes = maxResponseBytes;
    }

    public List<String> getReplayHeaders() {
      return replayHeaders;
    }

    public void setReplayHeaders(List<String> replayHeaders) {
      this.replayHeaders = replayHeaders;
    }

    public List<String> getNeverStoreHeaders() {
      return neverStoreHeaders;
    }

    public void setNeverStoreHeaders(List<String> neverStoreHeaders) {
      this.neverStoreHeaders = neverStoreHeaders;
    }

    public Duration getRetryAfter() {
      return retryAfter;
    }

    public void setRetryAfter(Duration retryAfter) {
      this.retryAfter = retryAfter;
    }

    public int getFilterOrder() {
      return filterOrder;
    }

    public void setFilterOrder(int filterOrder) {
      this.filterOrder = filterOrder;
    }

    public boolean isProblemDetails() {
      return problemDetails;
    }

    public void setProblemDetails(boolean problemDetails) {
      this.problemDetails = problemDetails;
    }
  }

  /** {@code once.metrics.*}: Micrometer meters (with once-micrometer and a MeterRegistry). */
  public static class Metrics {
    /** Record Once's meters into the context's MeterRegistry. */
    private boolean enabled = true;
    /** Tag meters with the key's scope; turn off when scopes are many. */
    private boolean scopeTag = true;

    public boolean isEnabled() {
      return enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    public boolean isScopeTag() {
      return scopeTag;
    }

    public void setScopeTag(boolean scopeTag) {
      this.scopeTag = scopeTag;
    }
  }

  /** {@code once.observations.*}: Micrometer observations (traces), with an ObservationRegistry. */
  public static class Observations {
    /** Observe every call into the context's ObservationRegistry (spans with tracing). */
    private boolean enabled = true;

    public boolean isEnabled() {
      return enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }
  }
}
