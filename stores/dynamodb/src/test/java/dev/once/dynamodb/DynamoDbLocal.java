package dev.once.dynamodb;

import com.amazonaws.services.dynamodbv2.local.embedded.DynamoDBEmbedded;
import com.amazonaws.services.dynamodbv2.local.server.LocalDynamoDBRequestHandler;
import com.amazonaws.services.dynamodbv2.local.server.LocalDynamoDBServerHandler;
import com.amazonaws.services.dynamodbv2.local.shared.access.AmazonDynamoDBLocal;
import java.net.URI;
import java.util.List;
import java.util.UUID;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.server.handler.ContextHandler;
import org.eclipse.jetty.server.handler.ContextHandlerCollection;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.AwsCredentialsProvider;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.core.client.config.ClientOverrideConfiguration;
import software.amazon.awssdk.core.interceptor.ExecutionInterceptor;
import software.amazon.awssdk.core.retry.RetryMode;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.dynamodb.DynamoDbAsyncClient;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;

/**
 * DynamoDB Local ({@code com.amazonaws:DynamoDBLocal}, from Maven Central), in memory, in this JVM,
 * serving HTTP on 127.0.0.1 on a free port: started once per JVM at first use, stopped by a
 * shutdown hook (its threads are not daemons). Tests reach it through the real SDK HTTP clients.
 * DynamoDBLocal 2.x carries its own SQLite native libraries; nothing else is needed.
 *
 * <p>Public (and shipped in the test jar) so that the Lambda example can use it.
 */
public final class DynamoDbLocal implements AutoCloseable {

  /** The region the clients claim; DynamoDB Local ignores it. */
  public static final Region REGION = Region.US_EAST_1;

  private static DynamoDbLocal instance;
  private static DynamoDbClient embedded;

  private final Server server;
  private final LocalDynamoDBServerHandler handler;
  private final URI endpoint;
  private final DynamoDbClient client;
  private final DynamoDbAsyncClient asyncClient;

  private DynamoDbLocal(int port) throws Exception {
    // What ServerRunner -inMemory does, but bound to 127.0.0.1 (by default on an ephemeral port: no
    // race for a "free" port) and without its telemetry.
    handler = new LocalDynamoDBServerHandler(
        new LocalDynamoDBRequestHandler(0, true, null, false, false), null);
    server = new Server();
    ServerConnector connector = new ServerConnector(server);
    connector.setHost("127.0.0.1");
    connector.setPort(port);
    server.addConnector(connector);
    ContextHandler context = new ContextHandler();
    context.setHandler(handler);
    server.setHandler(new ContextHandlerCollection(context));
    server.start();
    endpoint = URI.create("http://127.0.0.1:" + connector.getLocalPort());
    ClientOverrideConfiguration overrides = ClientOverrideConfiguration.builder()
        .retryStrategy(RetryMode.STANDARD).build();
    client = DynamoDbClient.builder()
        .region(REGION)
        .endpointOverride(endpoint)
        .credentialsProvider(credentials())
        .httpClient(UrlConnectionHttpClient.builder().build())
        .overrideConfiguration(overrides)
        .build();
    asyncClient = DynamoDbAsyncClient.builder()
        .region(REGION)
        .endpointOverride(endpoint)
        .credentialsProvider(credentials())
        .overrideConfiguration(overrides)
        .build();
  }

  /** The server, started at the first call. */
  public static synchronized DynamoDbLocal get() {
    if (instance == null) {
      try {
        instance = new DynamoDbLocal(0);
      } catch (Exception e) {
        throw new IllegalStateException("DynamoDB Local did not start", e);
      }
      DynamoDbLocal started = instance;
      Runtime.getRuntime().addShutdownHook(new Thread(started::stop, "dynamodb-local-stop"));
    }
    return instance;
  }

  /**
   * A private server of its own (its own in-memory data) on 127.0.0.1:{@code port}, for a test
   * that needs a chosen port, e.g. to start the server where a store already points. The caller
   * closes it.
   */
  public static DynamoDbLocal start(int port) {
    try {
      return new DynamoDbLocal(port);
    } catch (Exception e) {
      throw new IllegalStateException("DynamoDB Local did not start on port " + port, e);
    }
  }

  /**
   * A client of DynamoDB Local's embedded variant: the same engine called in this JVM, without
   * HTTP (about ten times faster per call). Started at the first call, shared.
   */
  public static synchronized DynamoDbClient embedded() {
    if (embedded == null) {
      AmazonDynamoDBLocal local = DynamoDBEmbedded.create(true);
      Runtime.getRuntime().addShutdownHook(new Thread(local::shutdown, "dynamodb-embedded-stop"));
      embedded = local.dynamoDbClient();
    }
    return embedded;
  }

  /** Credentials DynamoDB Local accepts (any letters and digits). */
  public static AwsCredentialsProvider credentials() {
    return StaticCredentialsProvider.create(AwsBasicCredentials.create("once", "local"));
  }

  /** A table name no other test uses. */
  public static String uniqueTable(String prefix) {
    return prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
  }

  /** Where the server listens, e.g. {@code http://127.0.0.1:41234}. */
  public URI endpoint() {
    return endpoint;
  }

  /** A shared synchronous client (URL-connection HTTP client). Do not close it. */
  public DynamoDbClient client() {
    return client;
  }

  /** A shared asynchronous client (Netty). Do not close it. */
  public DynamoDbAsyncClient asyncClient() {
    return asyncClient;
  }

  /** A new synchronous client of this server with {@code interceptors}; the caller closes it. */
  public DynamoDbClient newClient(ExecutionInterceptor... interceptors) {
    return DynamoDbClient.builder()
        .region(REGION)
        .endpointOverride(endpoint)
        .credentialsProvider(credentials())
        .httpClient(UrlConnectionHttpClient.builder().build())
        .overrideConfiguration(c -> c.retryStrategy(RetryMode.STANDARD)
            .executionInterceptors(List.of(interceptors)))
        .build();
  }

  /** A new asynchronous client of this server with {@code interceptors}; the caller closes it. */
  public DynamoDbAsyncClient newAsyncClient(ExecutionInterceptor... interceptors) {
    return DynamoDbAsyncClient.builder()
        .region(REGION)
        .endpointOverride(endpoint)
        .credentialsProvider(credentials())
        .overrideConfiguration(c -> c.retryStrategy(RetryMode.STANDARD)
            .executionInterceptors(List.of(interceptors)))
        .build();
  }

  /** A store over the shared clients on a new table of its own, created with TTL. */
  public DynamoDbStore newStore(String tablePrefix) {
    DynamoDbStore store = DynamoDbStore.builder(client).asyncClient(asyncClient)
        .table(uniqueTable(tablePrefix)).build();
    store.createTable();
    return store;
  }

  /** Stops a server from {@link #start(int)}; the shared one stops when the JVM exits. */
  @Override
  public void close() {
    if (this == instance) {
      throw new IllegalStateException("the shared DynamoDB Local stops when the JVM exits");
    }
    stop();
  }

  private void stop() {
    client.close();
    asyncClient.close();
    try {
      server.stop();
    } catch (Exception e) {
      // exiting anyway
    }
    handler.close();
  }
}
