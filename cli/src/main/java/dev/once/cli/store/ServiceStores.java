package dev.once.cli.store;

import dev.once.IdempotencyKey;
import dev.once.StoreUnavailableException;
import dev.once.cli.store.StoreUris.Kind;
import dev.once.cli.store.StoreUris.OpenStore;
import dev.once.cli.store.StoreUris.StoreUri;
import dev.once.cli.support.CommandFailure;
import dev.once.dynamodb.DynamoDbStore;
import dev.once.jdbc.JdbcStore;
import dev.once.redis.Durability;
import dev.once.redis.RedisStore;
import dev.once.spi.IdempotencyStore;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.regions.Region;

/**
 * The stores of {@code --store} reached through a client of their own rather than JDBC: DynamoDB
 * ({@code dynamodb://local}, {@code dynamodb://REGION}) and Redis. Parsing touches nothing; opening
 * makes one call, so an unreachable service or a missing table fails at once. Public for
 * {@link Service}, what {@link StoreUris.StoreUri#service()} carries; the rest is this package's.
 */
public final class ServiceStores {

  /** Where {@code dynamodb://local} looks without {@code ?endpoint=}: DynamoDB Local's default. */
  static final String LOCAL_DYNAMODB = "http://localhost:8000";

  private static final Pattern REGION = Pattern.compile("[a-z]{2}(-[a-z]+)+-\\d+");
  private static final IdempotencyKey PROBE = IdempotencyKey.of("once.cli", "probe");

  private ServiceStores() {}

  /**
   * What a service store's client needs, parsed from the URI.
   *
   * @param host       DynamoDB: {@code local} or the region; Redis: the whole URI, password
   *                   included (never printed)
   * @param parameters DynamoDB: {@code table}, {@code endpoint}
   */
  public record Service(String host, Map<String, String> parameters) {}

  /**
   * {@code dynamodb://local[?endpoint=URL][&table=NAME]} or
   * {@code dynamodb://REGION[?table=NAME][&endpoint=URL]}.
   */
  static StoreUri parseDynamoDb(String text) {
    String expected = " (expected dynamodb://local or dynamodb://REGION, e.g. "
        + "dynamodb://eu-west-1?table=once_records)";
    URI uri;
    try {
      uri = new URI(text);
    } catch (URISyntaxException e) {
      throw new IllegalArgumentException("store URI '" + text + "' is malformed: " + e.getReason()
          + expected);
    }
    String host = uri.getHost();
    if (host == null || (uri.getRawPath() != null && !uri.getRawPath().isEmpty()
        && !uri.getRawPath().equals("/")) || uri.getPort() >= 0 || uri.getRawUserInfo() != null) {
      throw new IllegalArgumentException("store URI '" + text + "' names no region" + expected);
    }
    host = host.toLowerCase(Locale.ROOT);
    if (!host.equals("local") && !REGION.matcher(host).matches()) {
      throw new IllegalArgumentException("store URI '" + text + "': '" + host
          + "' is not an AWS region" + expected);
    }
    Map<String, String> parameters = parameters(text, uri, Set.of("table", "endpoint"));
    if (parameters.containsKey("endpoint")) {
      try {
        URI endpoint = new URI(parameters.get("endpoint"));
        if (endpoint.getHost() == null || !(endpoint.getScheme().equals("http")
            || endpoint.getScheme().equals("https"))) {
          throw new URISyntaxException(parameters.get("endpoint"), "not an http(s) URL");
        }
      } catch (URISyntaxException | NullPointerException e) {
        throw new IllegalArgumentException("store URI '" + text + "': endpoint must be an "
            + "http(s) URL, e.g. http://localhost:8000");
      }
    }
    return new StoreUri(Kind.DYNAMODB, text, null, null, null, null,
        new Service(host, parameters));
  }

  private static Map<String, String> parameters(String text, URI uri, Set<String> known) {
    Map<String, String> parameters = new LinkedHashMap<>();
    String query = uri.getRawQuery();
    if (query == null || query.isEmpty()) {
      return parameters;
    }
    for (String pair : query.split("&")) {
      int eq = pair.indexOf('=');
      String name = URLDecoder.decode(eq < 0 ? pair : pair.substring(0, eq),
          StandardCharsets.UTF_8);
      String value = eq < 0 ? "" : URLDecoder.decode(pair.substring(eq + 1),
          StandardCharsets.UTF_8);
      if (!known.contains(name)) {
        throw new IllegalArgumentException("store URI '" + text + "': unknown parameter '" + name
            + "' (known: " + String.join(", ", known.stream().sorted().toList()) + ")");
      }
      if (value.isEmpty()) {
        throw new IllegalArgumentException("store URI '" + text + "': parameter '" + name
            + "' is empty");
      }
      parameters.put(name, value);
    }
    return parameters;
  }

  /**
   * {@code redis://[:password@]host[:port][/db]}, {@code rediss://…},
   * {@code redis-sentinel://host:port[,host:port…]#primary} and
   * {@code redis-cluster://host:port[,host:port…]}: Lettuce's syntax, checked further when opened.
   */
  static StoreUri parseRedis(String text, String scheme) {
    String rest = text.substring(scheme.length() + 1);
    String expected = scheme.endsWith("cluster")
        ? " (expected " + scheme + "://host:port[,host:port...])"
        : " (expected " + scheme + "://[:password@]host[:port][/database])";
    if (!rest.startsWith("//") || rest.length() == 2 || rest.charAt(2) == '/'
        || rest.charAt(2) == '?') {
      throw new IllegalArgumentException("store URI '" + StoreUris.mask(text) + "' names no host"
          + expected);
    }
    Kind kind = scheme.endsWith("cluster") ? Kind.REDIS_CLUSTER : Kind.REDIS;
    return new StoreUri(kind, StoreUris.mask(text), null, null, null, null,
        new Service(text, Map.of()));
  }

  /**
   * Opens the store; {@code table} is used unless the URI names one. Makes no call: the first
   * comes with {@link OpenStore#createSchema()} or {@link OpenStore#requireSchema()}, which every
   * command makes before its work.
   */
  static OpenStore open(StoreUri uri, String table) {
    return open(uri, table, null);
  }

  /** As {@link #open(StoreUri, String)}; a Redis store's records under {@code keyPrefix}. */
  static OpenStore open(StoreUri uri, String table, String keyPrefix) {
    return open(uri, table, keyPrefix, null);
  }

  /**
   * As {@link #open(StoreUri, String, String)}; a Redis store writing with {@code durability}
   * (null: the store's default).
   */
  static OpenStore open(StoreUri uri, String table, String keyPrefix, Durability durability) {
    Service service = uri.service();
    if (uri.kind() == Kind.REDIS || uri.kind() == Kind.REDIS_CLUSTER) {
      try {
        RedisStore.Builder builder = RedisStore.builder(service.host());
        if (keyPrefix != null) {
          builder.keyPrefix(keyPrefix);
        }
        if (durability != null) {
          builder.durability(durability);
        }
        // Connects at the first call (requireSchema or createSchema probes it), as a SQL store.
        return new OpenStore(uri, builder.build(), null);
      } catch (IllegalArgumentException e) {
        throw new CommandFailure(CommandFailure.CANNOT_RUN, "store URI '" + uri.display() + "': "
            + StoreUris.mask(e.getMessage()));
      } catch (StoreUnavailableException e) {
        throw new CommandFailure(CommandFailure.CANNOT_RUN,
            StoreUris.cannotOpenMessage(uri, StoreUris.mask(StoreUris.causeMessage(e))));
      }
    }
    String name = service.parameters().getOrDefault("table", table);
    try {
      DynamoDbStore.Builder builder;
      if (service.host().equals("local")) {
        builder = DynamoDbStore.builder(Region.US_EAST_1)
            .endpoint(URI.create(service.parameters().getOrDefault("endpoint", LOCAL_DYNAMODB)))
            // DynamoDB Local accepts any key of letters and digits.
            .credentials(StaticCredentialsProvider.create(
                AwsBasicCredentials.create("local", "local")));
      } else {
        builder = DynamoDbStore.builder(Region.of(service.host()));
        if (service.parameters().containsKey("endpoint")) {
          builder.endpoint(URI.create(service.parameters().get("endpoint")));
        }
      }
      return new OpenStore(uri, builder.table(name).build(), null);
    } catch (IllegalArgumentException e) {
      throw new CommandFailure(CommandFailure.CANNOT_RUN, e.getMessage());
    } catch (RuntimeException e) {
      // The SDK's own errors (no credentials, a bad region) are one line for the user.
      throw new CommandFailure(CommandFailure.CANNOT_RUN,
          StoreUris.cannotOpenMessage(uri, StoreUris.causeMessage(e)));
    }
  }

  /**
   * Creates the table (DynamoDB: on demand, with TTL); Redis has none, so its connection is
   * checked instead (the store connects at its first call).
   */
  static void createSchema(IdempotencyStore store) {
    if (store instanceof DynamoDbStore dynamo) {
      dynamo.createTable();
    } else if (store instanceof RedisStore) {
      store.find(PROBE);
    }
  }

  /**
   * The command that creates {@code table} at {@code uri}, naming the table unless it is the
   * default or the URI names it already (else it would create the default one).
   */
  static String schemaCommand(StoreUri uri, String table) {
    boolean named = uri.service() != null && table.equals(uri.service().parameters().get("table"));
    return "once schema --apply --store " + uri.display()
        + (named || table.equals(JdbcStore.DEFAULT_TABLE) ? "" : " --table " + table);
  }

  /** Fails with a line naming the fix when the store has no table, or cannot be reached. */
  static void requireSchema(StoreUri uri, IdempotencyStore store) {
    if (uri.kind() == Kind.MEMORY) {
      return;
    }
    try {
      store.find(PROBE); // Redis keeps no schema: this checks the connection
    } catch (StoreUnavailableException e) {
      String cause = StoreUris.causeMessage(e);
      if (store instanceof RedisStore) {
        throw new CommandFailure(CommandFailure.CANNOT_RUN,
            StoreUris.cannotOpenMessage(uri, StoreUris.mask(cause)));
      }
      if (store instanceof DynamoDbStore dynamo && cause.contains("ResourceNotFound")
          || cause.toLowerCase(Locale.ROOT).contains("non-existent table")
          || cause.toLowerCase(Locale.ROOT).contains("not found")) {
        String table = ((DynamoDbStore) store).table();
        throw new CommandFailure(CommandFailure.CANNOT_RUN, "no table " + table + " at "
            + uri.display() + "; create it with: " + schemaCommand(uri, table));
      }
      throw new CommandFailure(CommandFailure.CANNOT_RUN,
          StoreUris.cannotOpenMessage(uri, cause));
    }
  }

  /** Where the records are, for people. */
  static String describe(StoreUri uri, IdempotencyStore store) {
    if (store instanceof DynamoDbStore dynamo) {
      return "DynamoDB " + (uri.service().host().equals("local")
          ? "Local at " + uri.service().parameters().getOrDefault("endpoint", LOCAL_DYNAMODB)
          : "in " + uri.service().host()) + ", table " + dynamo.table();
    }
    if (store instanceof RedisStore redis) {
      return uri.kind().label() + " " + uri.display() + ", keys " + redis.keyPrefix() + "*";
    }
    return uri.display();
  }
}
