package dev.once.cli.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import dev.once.cli.store.StoreUris.Kind;
import dev.once.cli.store.StoreUris.StoreUri;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class StoreUrisTest {

  @Test
  void sqlitePathsAreResolvedAgainstTheCurrentDirectory() {
    StoreUri uri = StoreUris.parse(StoreOption.DEFAULT_URI);

    assertThat(uri.kind()).isEqualTo(Kind.SQLITE);
    assertThat(uri.file()).isEqualTo(Path.of("once-data/once.db").toAbsolutePath());
    assertThat(uri.display()).isEqualTo("sqlite:./once-data/once.db");
    assertThat(uri.persistent()).isTrue();
  }

  @Test
  void sqliteAcceptsAbsoluteHomeAndUriFormsAndTheJdbcUrl() {
    String home = System.getProperty("user.home");
    assertThat(StoreUris.parse("sqlite:/var/x/../once.db").file()).isEqualTo(Path.of("/var/once.db"));
    assertThat(StoreUris.parse("sqlite:~/once.db").file()).isEqualTo(Path.of(home, "once.db"));
    assertThat(StoreUris.parse("sqlite:///tmp/once.db").file()).isEqualTo(Path.of("/tmp/once.db"));
    assertThat(StoreUris.parse("jdbc:sqlite:/tmp/once.db").file()).isEqualTo(Path.of("/tmp/once.db"));
  }

  @Test
  void memoryIsNotPersistent() {
    StoreUri uri = StoreUris.parse("memory:");

    assertThat(uri.kind()).isEqualTo(Kind.MEMORY);
    assertThat(uri.persistent()).isFalse();
  }

  @Test
  void postgresUrisBecomeJdbcUrlsWithTheCredentialsApart() {
    StoreUri uri = StoreUris.parse("postgres://app:p%40ss%3Aw+rd@db.example:6543/orders?sslmode=require");

    assertThat(uri.kind()).isEqualTo(Kind.POSTGRESQL);
    assertThat(uri.jdbcUrl()).isEqualTo("jdbc:postgresql://db.example:6543/orders?sslmode=require");
    assertThat(uri.user()).isEqualTo("app");
    assertThat(uri.password()).isEqualTo("p@ss:w+rd");
    assertThat(uri.display()).isEqualTo("postgres://app:***@db.example:6543/orders?sslmode=require");
    assertThat(uri.toString()).doesNotContain("p@ss", "p%40ss");
  }

  @ParameterizedTest
  @CsvSource({
      "postgres://127.0.0.1/test,          POSTGRESQL, jdbc:postgresql://127.0.0.1:5432/test",
      "postgresql://u@h:1/d,               POSTGRESQL, jdbc:postgresql://h:1/d",
      "postgres:///test,                   POSTGRESQL, jdbc:postgresql://localhost:5432/test",
      "mariadb://root@127.0.0.1/test,      MARIADB,    jdbc:mariadb://127.0.0.1:3306/test",
      "mariadb://u:p@[::1]:3307/d,         MARIADB,    jdbc:mariadb://[::1]:3307/d",
      "jdbc:postgresql://h:5/d?user=u,     POSTGRESQL, jdbc:postgresql://h:5/d?user=u",
      "jdbc:mariadb://h:5/d?user=u,        MARIADB,    jdbc:mariadb://h:5/d?user=u"})
  void serverUris(String text, Kind kind, String jdbcUrl) {
    StoreUri uri = StoreUris.parse(text);

    assertThat(uri.kind()).isEqualTo(kind);
    assertThat(uri.jdbcUrl()).isEqualTo(jdbcUrl);
  }

  @Test
  void passwordsAreMaskedWhereverTheyAre() {
    assertThat(StoreUris.parse("jdbc:postgresql://h/d?user=u&password=secret&ssl=true").display())
        .isEqualTo("jdbc:postgresql://h/d?user=u&password=***&ssl=true");
    assertThat(StoreUris.parse("mariadb://u@h/d?password=secret").display())
        .isEqualTo("mariadb://u@h:3306/d?password=***");
    assertThat(StoreUris.mask("redis://:secret@host")).isEqualTo("redis://:***@host");
  }

  @ParameterizedTest
  @ValueSource(strings = {"nats://x", "mongodb://h/d", "mysql://h/d", "jdbc:oracle:thin:@x",
      "file:/tmp/x"})
  void otherSchemesAreNotSupported(String text) {
    assertThatIllegalArgumentException().isThrownBy(() -> StoreUris.parse(text))
        .withMessage("store URI '" + text + "' is not supported by this build (supported: "
            + StoreUris.SUPPORTED + ")");
  }

  @Test
  void redisAndDynamoDbUrisParseWithoutConnecting() {
    assertThat(StoreUris.parse("redis://:pw@127.0.0.1:1/0").kind()).isEqualTo(Kind.REDIS);
    assertThat(StoreUris.parse("redis://:pw@127.0.0.1:1/0").display())
        .isEqualTo("redis://:***@127.0.0.1:1/0");
    assertThat(StoreUris.parse("redis-cluster://h1:7000,h2:7001").kind())
        .isEqualTo(Kind.REDIS_CLUSTER);
    StoreUri dynamo = StoreUris.parse("dynamodb://eu-west-1?table=orders");
    assertThat(dynamo.kind()).isEqualTo(Kind.DYNAMODB);
    assertThat(dynamo.service().host()).isEqualTo("eu-west-1");
    assertThat(dynamo.service().parameters()).containsEntry("table", "orders");
    assertThat(StoreUris.parse("dynamodb://local").service().parameters()).isEmpty();
  }

  @ParameterizedTest
  @ValueSource(strings = {"", " ", "sqlite:", "sqlite:///", "sqlite:/tmp/", "sqlite:..", "sqlite://host/x", "sqlite::memory:",
      "memory:x", "once.db", ":x", "postgres://h", "postgres://h/", "postgres://h/a/b",
      "postgres://u:p@h:port/d", "postgres://h/d#x", "postgres://h /d", "jdbc:postgresql",
      "jdbc:mariadb:"})
  void malformedUrisAreRejectedOnOneLine(String text) {
    assertThatIllegalArgumentException().isThrownBy(() -> StoreUris.parse(text))
        .satisfies(e -> assertThat(e.getMessage()).doesNotContain("\n"));
  }

  @Test
  void theCauseIsTheDriversOwnMessage() {
    Exception wrapped = new RuntimeException("Failed to initialize pool: refused",
        new java.sql.SQLException("Connection to h:1 refused.\nCheck the port.",
            new java.net.ConnectException("Connection refused")));

    assertThat(StoreUris.causeMessage(wrapped)).isEqualTo("Connection to h:1 refused. Check the port.");
    assertThat(StoreUris.causeMessage(new IllegalStateException("x", new Exception("deep"))))
        .isEqualTo("deep");
  }
}
