package dev.once.dynamodb;

import dev.once.Checkpoint;
import dev.once.IdempotencyKey;
import dev.once.LeaseLostException;
import dev.once.PayloadTooLargeException;
import dev.once.StoreUnavailableException;
import dev.once.dynamodb.internal.Attribute;
import dev.once.dynamodb.internal.AttributeNames;
import dev.once.dynamodb.internal.DynamoDbEngine;
import dev.once.dynamodb.internal.Errors;
import dev.once.dynamodb.internal.TableSetup;
import dev.once.support.Checks;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.HeldClaim;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.IdempotencyStore;
import dev.once.spi.Outcome;
import java.net.URI;
import java.time.Duration;
import java.time.Instant;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.regex.Pattern;
import software.amazon.awssdk.auth.credentials.AwsCredentialsProvider;
import software.amazon.awssdk.core.client.config.ClientOverrideConfiguration;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.core.retry.RetryMode;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.dynamodb.DynamoDbAsyncClient;
import software.amazon.awssdk.services.dynamodb.DynamoDbAsyncClientBuilder;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;
import software.amazon.awssdk.services.dynamodb.DynamoDbClientBuilder;

/**
 * An {@link IdempotencyStore} in an Amazon DynamoDB table, one item per key, on the AWS SDK v2.
 *
 * <pre>{@code
 * DynamoDbStore store = DynamoDbStore.builder(dynamoDbClient)   // your client, never closed here
 *     .table("once_records")
 *     .build();
 * store.createTable();                    // or create it with CloudFormation/CDK/Terraform
 * Once once = Once.builder(store).build();
 * }</pre>
 *
 * <ul>
 *   <li><b>Claim</b>: one conditional {@code UpdateItem} for a new or expired key; a duplicate is
 *       answered (Replay, InProgress, Mismatch) from the record DynamoDB returns with the failed
 *       condition ({@code ReturnValuesOnConditionCheckFailure=ALL_OLD}), without a second read. A
 *       retry of a FAILED record or a takeover of an expired lease takes a second conditional
 *       write, fenced on the token just read; the token grows by one. Every claim stores its
 *       {@code claimId}, so a claim re-sent (an SDK retry whose first answer was lost) finds its
 *       own live claim and is answered Acquired with the stored token, writing nothing.
 *   <li><b>complete / fail / extend / checkpoint</b>: one {@code UpdateItem} each, conditioned on
 *       the token and IN_PROGRESS; a failed condition is {@link LeaseLostException}, unless the
 *       item it returns shows this very completion or failure already applied (acknowledged).
 *   <li><b>Retention</b>: the {@code expires_at} attribute (epoch microseconds by the caller's
 *       clock) decides, so an expired item still in the table behaves as absent; the {@code ttl}
 *       attribute (epoch seconds, rounded up) lets DynamoDB's native TTL delete it later at no
 *       cost. {@link #purgeExpired} and {@link #reapExpiredLeases} scan the table.
 *   <li><b>claimAll</b>: DynamoDB has no conditional batch write; with an asynchronous client the
 *       keys of a batch are claimed in parallel (bounded), otherwise one by one; when one fails,
 *       the others are released before the failure is thrown.
 *   <li><b>Errors</b>: the SDK retries throttling, 5xx and I/O errors with backoff; what remains
 *       becomes {@link StoreUnavailableException}, whose
 *       {@link StoreUnavailableException#mayHaveBeenApplied()} is false only when no attempt can
 *       have written (no connection, or DynamoDB refused it with a 4xx). Building the store makes
 *       no call: it starts while DynamoDB is down, and works once it is up. Outcomes and
 *       checkpoints larger than
 *       {@link #maxPayloadBytes()} are refused with {@link PayloadTooLargeException} before the
 *       call.
 * </ul>
 *
 * Thread-safe. Closing the store closes only the clients it built itself.
 */
public final class DynamoDbStore implements IdempotencyStore {

  /** The table name used unless {@link Builder#table} says otherwise. */
  public static final String DEFAULT_TABLE = "once_records";
  /** DynamoDB's limit on one item: 400 KB, names and values together. */
  public static final int ITEM_SIZE_LIMIT = DynamoDbEngine.ITEM_SIZE_LIMIT;
  /** Room kept in an item for its key, names, media type, last error and numbers. */
  public static final int ITEM_OVERHEAD_RESERVE = 8 * 1024;
  /** The largest {@link Builder#maxPayloadBytes} accepted: what one payload can ever fill. */
  public static final int MAX_PAYLOAD_BYTES_LIMIT = ITEM_SIZE_LIMIT - ITEM_OVERHEAD_RESERVE;
  /**
   * The default bound on an outcome or a checkpoint: half of {@link #MAX_PAYLOAD_BYTES_LIMIT}, so
   * that a completed record holding both, each at the bound, still fits in one item.
   */
  public static final int DEFAULT_MAX_PAYLOAD_BYTES = MAX_PAYLOAD_BYTES_LIMIT / 2;
  /** Keys of one {@code claimAll} batch claimed at the same time, by default. */
  public static final int DEFAULT_CLAIM_ALL_CONCURRENCY = 8;

  /** Timeouts of the clients the store builds itself: a dead endpoint fails within seconds. */
  static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(2);
  static final Duration SOCKET_TIMEOUT = Duration.ofSeconds(5);
  static final Duration API_CALL_ATTEMPT_TIMEOUT = Duration.ofSeconds(5);
  static final Duration API_CALL_TIMEOUT = Duration.ofSeconds(15);

  private static final Pattern TABLE_NAME = Pattern.compile("[A-Za-z0-9_.-]{3,255}");

  private final DynamoDbClient client;
  private final DynamoDbAsyncClient asyncClient;
  private final boolean ownsClients;
  private final String table;
  private final AttributeNames names;
  private final int maxPayloadBytes;
  private final DynamoDbEngine engine;

  private DynamoDbStore(DynamoDbClient client, DynamoDbAsyncClient asyncClient,
      boolean ownsClients, String table, AttributeNames names, int maxPayloadBytes,
      int claimAllConcurrency) {
    this.client = client;
    this.asyncClient = asyncClient;
    this.ownsClients = ownsClients;
    this.table = table;
    this.names = names;
    this.maxPayloadBytes = maxPayloadBytes;
    this.engine = new DynamoDbEngine(client, asyncClient, claimAllConcurrency, table, names,
        maxPayloadBytes);
  }

  /**
   * A store over the caller's client. The store never closes it. Configure its retries and
   * timeouts as the service needs (see the README); {@link Builder#asyncClient} adds a client for
   * parallel {@code claimAll}.
   */
  public static Builder builder(DynamoDbClient client) {
    return new Builder(Objects.requireNonNull(client, "client"), null);
  }

  /**
   * A store that builds (and on {@link #close()} closes) its own clients for {@code region}: a
   * synchronous one on the URL-connection HTTP client and, if an asynchronous HTTP client (Netty,
   * a runtime dependency of the SDK) is on the classpath, an asynchronous one for
   * {@code claimAll}. Standard retry mode (3 attempts with backoff), 2 s connect timeout, 5 s per
   * attempt, 15 s per call. Credentials from the default provider chain unless
   * {@link Builder#credentials} says otherwise; {@link Builder#endpoint} points at DynamoDB Local.
   */
  public static Builder builder(Region region) {
    return new Builder(null, Objects.requireNonNull(region, "region"));
  }

  /** Configures a {@link DynamoDbStore}; each setter checks its argument at once. */
  public static final class Builder {
    private final DynamoDbClient client;
    private final Region region;
    private DynamoDbAsyncClient asyncClient;
    private URI endpoint;
    private AwsCredentialsProvider credentials;
    private String table = DEFAULT_TABLE;
    private final Map<Attribute, String> attributeNames = new EnumMap<>(Attribute.class);
    private int maxPayloadBytes = DEFAULT_MAX_PAYLOAD_BYTES;
    private int claimAllConcurrency = DEFAULT_CLAIM_ALL_CONCURRENCY;

    private Builder(DynamoDbClient client, Region region) {
      this.client = client;
      this.region = region;
    }

    /**
     * The table, default {@value DynamoDbStore#DEFAULT_TABLE}: 3–255 characters of
     * {@code [A-Za-z0-9_.-]}, as DynamoDB requires.
     *
     * @throws IllegalArgumentException if the name is not a valid DynamoDB table name
     */
    public Builder table(String table) {
      Objects.requireNonNull(table, "table");
      if (!TABLE_NAME.matcher(table).matches()) {
        throw new IllegalArgumentException("a DynamoDB table name is 3–255 characters of"
            + " [A-Za-z0-9_.-], was '" + table + "'");
      }
      this.table = table;
      return this;
    }

    /**
     * Renames one attribute of the record items (defaults: {@link RecordAttribute#defaultName()}),
     * for instance {@code attributeName(RecordAttribute.TTL, "expiration")} for a table whose TTL
     * is already on {@code expiration}. Names must stay distinct ({@link #build()} checks).
     *
     * @throws IllegalArgumentException if the name is empty or longer than 255 characters
     */
    public Builder attributeName(RecordAttribute attribute, String name) {
      Attribute a = engineSide(attribute);
      attributeNames.put(a, AttributeNames.check(a, name));
      return this;
    }

    /**
     * The largest outcome or checkpoint body the store accepts, default
     * {@link DynamoDbStore#DEFAULT_MAX_PAYLOAD_BYTES} (196 KiB), at most
     * {@link DynamoDbStore#MAX_PAYLOAD_BYTES_LIMIT}. Above the default, an outcome and a
     * checkpoint that are both large may together exceed the 400 KB item: that completion is then
     * refused with {@link PayloadTooLargeException} by DynamoDB's answer.
     *
     * @throws IllegalArgumentException if not positive or above the limit
     */
    public Builder maxPayloadBytes(int bytes) {
      Checks.positive(bytes, "maxPayloadBytes");
      if (bytes > MAX_PAYLOAD_BYTES_LIMIT) {
        throw new IllegalArgumentException("maxPayloadBytes must be at most "
            + MAX_PAYLOAD_BYTES_LIMIT + " (a DynamoDB item holds 400 KB), was " + bytes);
      }
      this.maxPayloadBytes = bytes;
      return this;
    }

    /**
     * An asynchronous client over the same table, for {@code claimAll}: the keys of a batch are
     * then claimed in parallel. Only with {@link DynamoDbStore#builder(DynamoDbClient)}; the store
     * never closes it.
     *
     * @throws IllegalStateException if the store builds its own clients
     */
    public Builder asyncClient(DynamoDbAsyncClient asyncClient) {
      requireCallerClient("asyncClient");
      this.asyncClient = Objects.requireNonNull(asyncClient, "asyncClient");
      return this;
    }

    /**
     * How many keys of one {@code claimAll} batch are claimed at the same time on the asynchronous
     * client, default {@value DynamoDbStore#DEFAULT_CLAIM_ALL_CONCURRENCY}. 1 claims one by one.
     *
     * @throws IllegalArgumentException if not positive
     */
    public Builder claimAllConcurrency(int concurrency) {
      this.claimAllConcurrency = Checks.positive(concurrency, "claimAllConcurrency");
      return this;
    }

    /**
     * The endpoint of the clients the store builds, such as {@code http://127.0.0.1:8000} for
     * DynamoDB Local. Only with {@link DynamoDbStore#builder(Region)}.
     *
     * @throws IllegalStateException    if the store uses the caller's client
     * @throws IllegalArgumentException if the URI has no http or https scheme and host
     */
    public Builder endpoint(URI endpoint) {
      requireOwnClients("endpoint");
      Objects.requireNonNull(endpoint, "endpoint");
      if (endpoint.getScheme() == null || endpoint.getHost() == null
          || !(endpoint.getScheme().equals("http") || endpoint.getScheme().equals("https"))) {
        throw new IllegalArgumentException("endpoint must be an http or https URI with a host,"
            + " such as http://127.0.0.1:8000, was " + endpoint);
      }
      this.endpoint = endpoint;
      return this;
    }

    /**
     * Credentials of the clients the store builds (default: the SDK's default provider chain).
     * Only with {@link DynamoDbStore#builder(Region)}.
     *
     * @throws IllegalStateException if the store uses the caller's client
     */
    public Builder credentials(AwsCredentialsProvider credentials) {
      requireOwnClients("credentials");
      this.credentials = Objects.requireNonNull(credentials, "credentials");
      return this;
    }

    private void requireCallerClient(String setting) {
      if (client == null) {
        throw new IllegalStateException(setting + " applies to a store over your own client"
            + " (DynamoDbStore.builder(DynamoDbClient)); this store builds its own clients");
      }
    }

    private void requireOwnClients(String setting) {
      if (client != null) {
        throw new IllegalStateException(setting + " applies only to a store that builds its own"
            + " clients (DynamoDbStore.builder(Region)); configure your DynamoDbClient instead");
      }
    }

    /**
     * The store. Makes no call to DynamoDB (use {@link DynamoDbStore#createTable()} to create or
     * check the table).
     *
     * @throws IllegalArgumentException if two attributes share a name
     */
    public DynamoDbStore build() {
      AttributeNames names = AttributeNames.of(attributeNames);
      if (client != null) {
        return new DynamoDbStore(client, asyncClient, false, table, names, maxPayloadBytes,
            claimAllConcurrency);
      }
      DynamoDbClient sync = syncClient();
      DynamoDbAsyncClient async = claimAllConcurrency > 1 ? asyncClientIfAvailable() : null;
      return new DynamoDbStore(sync, async, true, table, names, maxPayloadBytes,
          claimAllConcurrency);
    }

    private ClientOverrideConfiguration overrides() {
      return ClientOverrideConfiguration.builder()
          .retryStrategy(RetryMode.STANDARD)
          .apiCallAttemptTimeout(API_CALL_ATTEMPT_TIMEOUT)
          .apiCallTimeout(API_CALL_TIMEOUT)
          .build();
    }

    private DynamoDbClient syncClient() {
      DynamoDbClientBuilder b = DynamoDbClient.builder()
          .region(region)
          .httpClient(UrlConnectionHttpClient.builder()
              .connectionTimeout(CONNECT_TIMEOUT)
              .socketTimeout(SOCKET_TIMEOUT)
              .build())
          .overrideConfiguration(overrides());
      if (endpoint != null) {
        b.endpointOverride(endpoint);
      }
      if (credentials != null) {
        b.credentialsProvider(credentials);
      }
      return b.build();
    }

    private DynamoDbAsyncClient asyncClientIfAvailable() {
      DynamoDbAsyncClientBuilder b = DynamoDbAsyncClient.builder()
          .region(region)
          .overrideConfiguration(overrides());
      if (endpoint != null) {
        b.endpointOverride(endpoint);
      }
      if (credentials != null) {
        b.credentialsProvider(credentials);
      }
      try {
        return b.build();
      } catch (SdkException e) {
        // No asynchronous HTTP client on the classpath (e.g. Netty excluded for a small Lambda
        // package): claimAll claims one by one.
        return null;
      }
    }
  }

  /**
   * Creates the table if it does not exist (partition key {@link RecordAttribute#KEY} of type S,
   * on-demand billing), waits until it is ACTIVE and enables native TTL on
   * {@link RecordAttribute#TTL}. An existing table is checked, not changed, except that TTL is
   * enabled if it is off. Safe to call at every start (two calls: DescribeTable and
   * DescribeTimeToLive); needs {@code dynamodb:CreateTable}, {@code DescribeTable},
   * {@code DescribeTimeToLive} and {@code UpdateTimeToLive}.
   *
   * @return true if this call created the table
   * @throws IllegalStateException     if the table exists with another key schema, or has TTL on
   *                                   another attribute
   * @throws StoreUnavailableException if DynamoDB refuses or cannot be reached
   */
  public boolean createTable() {
    try {
      return TableSetup.ensure(client, table, names);
    } catch (RuntimeException e) {
      throw Errors.map(e, table, "createTable");
    }
  }

  /** The table this store uses. */
  public String table() {
    return table;
  }

  /** The name of {@code attribute} in this store's items. */
  public String attributeName(RecordAttribute attribute) {
    return names.get(engineSide(attribute));
  }

  /** The engine's constant of {@code attribute}: the same name. */
  private static Attribute engineSide(RecordAttribute attribute) {
    return Attribute.valueOf(Objects.requireNonNull(attribute, "attribute").name());
  }

  /** Whether {@code claimAll} claims the keys of a batch in parallel (an async client is set). */
  public boolean claimsBatchesInParallel() {
    return asyncClient != null;
  }

  @Override
  public Claim claim(ClaimRequest request) {
    return engine.claim(request);
  }

  /**
   * With an asynchronous client ({@link Builder#asyncClient}, or the one a store building its own
   * clients makes when the SDK's asynchronous HTTP client is on the classpath): the claim on it,
   * never blocking a thread. Without one: {@link #claim} on {@code blocking}.
   */
  @Override
  public CompletionStage<Claim> claimAsync(ClaimRequest request, Executor blocking) {
    return engine.hasAsyncClient() ? engine.claimAsync(request)
        : IdempotencyStore.super.claimAsync(request, blocking);
  }

  /**
   * {@link #complete}: with an asynchronous client ({@link Builder#asyncClient}), the same
   * conditional write on it, never blocking a thread. Without one: {@link #complete} on
   * {@code blocking}.
   */
  @Override
  public CompletionStage<Void> completeAsync(IdempotencyKey key, long token, Outcome outcome,
      Instant now, Duration retention, Executor blocking) {
    return engine.hasAsyncClient() ? engine.completeAsync(key, token, outcome, now, retention)
        : IdempotencyStore.super.completeAsync(key, token, outcome, now, retention, blocking);
  }

  /**
   * Claims a batch, answering in request order. With an asynchronous client, distinct keys are
   * claimed in parallel (at most {@link Builder#claimAllConcurrency} at a time) and the requests
   * of one key in order, each seeing the previous one's claim; without, one by one. Not atomic,
   * but all or nothing for the caller: if a claim fails (first, middle or last), no further key is
   * started, the claims in flight are awaited, and every claim the batch acquired is released as
   * FAILED (so the next delivery retries it at once) before the failure is thrown. A claim whose
   * answer was lost is looked up and released too if it was written.
   */
  @Override
  public List<Claim> claimAll(List<ClaimRequest> requests) {
    return engine.claimAll(requests);
  }

  @Override
  public void complete(IdempotencyKey key, long token, Outcome outcome, Instant now,
      Duration retention) {
    engine.complete(key, token, outcome, now, retention);
  }

  /** As the SPI says; an error longer than 4096 characters is cut to that length. */
  @Override
  public void fail(IdempotencyKey key, long token, String error, Instant now, Duration retention) {
    engine.fail(key, token, error, now, retention);
  }

  /** Conditional updates in parallel on the asynchronous client, when the store has one. */
  @Override
  public Set<IdempotencyKey> extendAll(List<HeldClaim> claims, Instant now, Duration lease) {
    return engine.extendAll(claims, now, lease);
  }

  @Override
  public void release(IdempotencyKey key, long token, String reason, Instant now,
      Duration retention) {
    engine.release(key, token, reason, now, retention);
  }

  @Override
  public Instant extend(IdempotencyKey key, long token, Instant now, Duration lease) {
    return engine.extend(key, token, now, lease);
  }

  @Override
  public void checkpoint(IdempotencyKey key, long token, Checkpoint checkpoint, Instant now) {
    engine.checkpoint(key, token, checkpoint, now);
  }

  /** The stored record, expired or not: a strongly consistent GetItem. */
  @Override
  public Optional<IdempotencyRecord> find(IdempotencyKey key) {
    return engine.find(key);
  }

  /**
   * Deletes up to {@code limit} expired records. A Scan of the whole table (filter
   * {@code expires_at <= now}, consistent reads, pages of up to 1000 items or 1 MB) with one
   * conditional DeleteItem per expired record. It reads every item it passes, so it costs read
   * capacity for the table's whole size: in production leave deletion to the table's native TTL
   * (free) and call this rarely, if at all.
   */
  @Override
  public int purgeExpired(Instant now, int limit) {
    return engine.purgeExpired(now, limit);
  }

  /**
   * Turns up to {@code limit} IN_PROGRESS records whose lease ended into FAILED. A Scan as for
   * {@link #purgeExpired}, with one conditional UpdateItem per reaped record. Claims take over
   * expired leases on their own; reap only to make them visible.
   */
  @Override
  public int reapExpiredLeases(Instant now, int limit) {
    return engine.reapExpiredLeases(now, limit);
  }

  @Override
  public int maxPayloadBytes() {
    return maxPayloadBytes;
  }

  /** Closes the clients the store built; leaves the caller's clients open. */
  @Override
  public void close() {
    if (ownsClients) {
      client.close();
      if (asyncClient != null) {
        asyncClient.close();
      }
    }
  }

  @Override
  public String toString() {
    return "DynamoDbStore[" + table + "]";
  }
}
