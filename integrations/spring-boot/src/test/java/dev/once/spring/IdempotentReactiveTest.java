package dev.once.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.IdempotencyKey;
import dev.once.KeyReusedException;
import dev.once.ReplayedFailureException;
import dev.once.reactor.OnceReactor;
import dev.once.spi.IdempotencyStore;
import dev.once.spi.Status;
import dev.once.spring.autoconfigure.OnceAutoConfiguration;
import java.io.IOException;
import java.net.URI;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * {@link Idempotent} methods returning {@code Mono<T>} and {@code Mono<ResponseEntity<T>>}, run
 * through once-reactor, in a real application context on the in-memory store and on PostgreSQL,
 * the beans called directly: the same keys, fingerprints, tenants, failures and stored
 * {@code ResponseEntity}s as a blocking method, an empty {@code Mono} stored as empty.
 */
class IdempotentReactiveTest {

  private static final String TABLE = "once_records_reactive";

  public record Receipt(String id, long amount) {}

  /** Every shape of reactive @Idempotent method the tests call. */
  public static class Payments {
    private final AtomicInteger runs = new AtomicInteger();
    private final AtomicInteger effects = new AtomicInteger();

    /** How often a method body ran (the proxy's fields are not the target's). */
    public int runs() {
      return runs.get();
    }

    public int effects() {
      return effects.get();
    }

    @Idempotent(key = "#id")
    public Mono<Receipt> charge(String id, long amount) {
      runs.incrementAndGet();
      return Mono.fromCallable(() -> new Receipt("ch_" + effects.incrementAndGet(), amount))
          .subscribeOn(Schedulers.parallel());
    }

    @Idempotent(key = "#id", tenant = "#customer")
    public Mono<String> pay(String customer, String id) {
      return Mono.just(customer + ":" + id + ":" + runs.incrementAndGet());
    }

    @Idempotent(key = "#id")
    public Mono<String> lookup(String id) {
      runs.incrementAndGet();
      return Mono.<String>empty().publishOn(Schedulers.parallel());
    }

    @Idempotent(key = "#id")
    public Mono<Void> mail(String id) {
      return Mono.fromRunnable(effects::incrementAndGet);
    }

    @Idempotent(key = "#id")
    public Mono<ResponseEntity<Receipt>> create(String id, int status) {
      int run = runs.incrementAndGet();
      return Mono.just(ResponseEntity.status(status).location(URI.create("/charges/" + id))
          .header("X-Run", Integer.toString(run)).body(new Receipt(id, 100)));
    }

    /** The blocking twin of {@link #create}: its replay's body has the declared type too. */
    @Idempotent(key = "#id")
    public ResponseEntity<Receipt> createBlocking(String id) {
      runs.incrementAndGet();
      return ResponseEntity.status(201).body(new Receipt(id, 100));
    }

    @Idempotent(key = "#id")
    public Mono<String> flaky(String id) {
      return runs.incrementAndGet() == 1 ? Mono.error(new IOException("gateway down"))
          : Mono.just("ok " + id);
    }

    @Idempotent(key = "#id", terminalOn = IllegalStateException.class)
    public Mono<String> cancel(String id) {
      runs.incrementAndGet();
      return Mono.error(new IllegalStateException("already shipped"));
    }

    @Idempotent(key = "#id")
    public Mono<String> attemptKey(String id) {
      return Mono.just(IdempotentAttempt.current().orElseThrow().key());
    }
  }

  public static class UnknownElement {
    @Idempotent(key = "#id")
    public Mono<?> call(String id) {
      return Mono.just(id);
    }
  }

  public static class UnknownBody {
    @Idempotent(key = "#id")
    public Mono<ResponseEntity<?>> call(String id) {
      return Mono.just(ResponseEntity.ok(id));
    }
  }

  public static class Many {
    @Idempotent(key = "#id")
    public Flux<String> call(String id) {
      return Flux.just(id);
    }
  }

  public static class Reactive {
    @Idempotent(key = "#id")
    public Mono<String> call(String id) {
      return Mono.just(id);
    }
  }

  /** Lease mode over the store named: the in-memory store, or a JdbcStore on PostgreSQL. */
  private static ApplicationContextRunner runner(String store) {
    ApplicationContextRunner runner = new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(OnceAutoConfiguration.class))
        .withBean(Payments.class);
    return store.equals("memory")
        ? runner.withPropertyValues("once.store=memory")
        : runner.withBean(DataSource.class, TestDatabases::postgres)
            .withPropertyValues("once.store=jdbc", "once.jdbc.create-schema=true",
                "once.jdbc.table=" + TABLE);
  }

  private static String id() {
    return UUID.randomUUID().toString();
  }

  private static <T> T block(Mono<T> mono) {
    return mono.block(Duration.ofSeconds(30));
  }

  /** The error {@code mono} fails with, as signalled (block() would wrap a checked one). */
  private static Throwable error(Mono<?> mono) {
    return mono.then(Mono.<Throwable>empty()).onErrorResume(Mono::just)
        .block(Duration.ofSeconds(30));
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"memory", "postgres"})
  void aMonoIsLazyRunsOncePerKeyAndReplaysItsValue(String store) {
    runner(store).run(context -> {
      Payments payments = context.getBean(Payments.class);
      IdempotencyStore records = context.getBean(IdempotencyStore.class);
      String id = id();

      Mono<Receipt> first = payments.charge(id, 1250);
      assertThat(payments.runs()).as("the method runs once the key is claimed").isZero();
      assertThat(records.find(IdempotencyKey.of("Payments.charge", id))).isEmpty();

      Receipt receipt = block(first);
      assertThat(block(payments.charge(id, 1250))).isEqualTo(receipt)
          .isInstanceOf(Receipt.class);
      assertThat(block(first)).as("subscribed again: a duplicate").isEqualTo(receipt);
      assertThat(receipt).isEqualTo(new Receipt("ch_1", 1250));
      assertThat(payments.runs()).isEqualTo(1);
      assertThat(payments.effects()).isEqualTo(1);
      assertThat(records.find(IdempotencyKey.of("Payments.charge", id)))
          .hasValueSatisfying(r -> assertThat(r.status()).isEqualTo(Status.COMPLETED));
    });
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"memory", "postgres"})
  void anEmptyMonoAndAMonoVoidAreStoredEmptyAndNeverRunAgain(String store) {
    runner(store).run(context -> {
      Payments payments = context.getBean(Payments.class);
      String lookup = id();
      String mail = id();

      for (int delivery = 0; delivery < 3; delivery++) {
        assertThat(payments.lookup(lookup).hasElement().block(Duration.ofSeconds(30))).isFalse();
        assertThat(block(payments.mail(mail))).isNull();
      }

      assertThat(payments.runs()).isEqualTo(1);
      assertThat(payments.effects()).isEqualTo(1);
      assertThat(context.getBean(IdempotencyStore.class)
          .find(IdempotencyKey.of("Payments.lookup", lookup)))
          .hasValueSatisfying(r -> assertThat(r.status()).isEqualTo(Status.COMPLETED));
    });
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"memory", "postgres"})
  void aMonoOfResponseEntityReplaysStatusHeadersAndBodyAndAServerErrorIsNotStored(
      String store) {
    runner(store).run(context -> {
      Payments payments = context.getBean(Payments.class);
      String id = id();

      ResponseEntity<Receipt> created = block(payments.create(id, 201));
      ResponseEntity<Receipt> replayed = block(payments.create(id, 201));

      assertThat(created.getStatusCode()).isEqualTo(HttpStatus.CREATED);
      assertThat(replayed.getStatusCode()).isEqualTo(HttpStatus.CREATED);
      assertThat(replayed.getHeaders().getLocation()).isEqualTo(URI.create("/charges/" + id));
      assertThat(replayed.getBody()).isEqualTo(new Receipt(id, 100));
      assertThat(replayed.getHeaders().containsHeader("X-Run"))
          .as("only the allow-listed headers are stored").isFalse();
      assertThat(payments.runs()).isEqualTo(1);

      String blocking = id();
      payments.createBlocking(blocking);
      assertThat(payments.createBlocking(blocking).getBody()).isEqualTo(new Receipt(blocking, 100));
      assertThat(payments.runs()).isEqualTo(2);

      String outage = id();
      assertThat(block(payments.create(outage, 503)).getStatusCode().value()).isEqualTo(503);
      assertThat(block(payments.create(outage, 503)).getHeaders().getFirst("X-Run"))
          .as("a 5xx is answered, not stored: the retry runs").isEqualTo("4");
      assertThat(payments.runs()).isEqualTo(4);
    });
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"memory", "postgres"})
  void retryableErrorsReleaseTheKeyTerminalOnesAreReplayedUnwrapped(String store) {
    runner(store).run(context -> {
      Payments payments = context.getBean(Payments.class);
      String flaky = id();

      assertThat(error(payments.flaky(flaky))).isInstanceOf(IOException.class)
          .hasMessage("gateway down");
      assertThat(block(payments.flaky(flaky))).isEqualTo("ok " + flaky);
      assertThat(block(payments.flaky(flaky))).isEqualTo("ok " + flaky);
      assertThat(payments.runs()).isEqualTo(2);

      String shipped = id();
      assertThat(error(payments.cancel(shipped)))
          .isInstanceOf(IllegalStateException.class).hasMessage("already shipped");
      assertThat(error(payments.cancel(shipped))).isInstanceOf(ReplayedFailureException.class);
      assertThat(payments.runs()).isEqualTo(3);
    });
  }

  @Test
  void aResubscriptionIsAnotherCallThatInvokesTheMethodAgainWhenItClaims() {
    runner("memory").run(context -> {
      Payments payments = context.getBean(Payments.class);
      String id = id();

      assertThat(block(payments.flaky(id).retry(1))).isEqualTo("ok " + id);
      assertThat(payments.runs()).isEqualTo(2);
    });
  }

  @Test
  void keysFingerprintsTenantsAndTheAttemptAreThoseOfABlockingMethod() {
    runner("memory").run(context -> {
      Payments payments = context.getBean(Payments.class);
      String id = id();

      block(payments.charge(id, 1));
      assertThat(error(payments.charge(id, 2))).isInstanceOf(KeyReusedException.class);
      assertThat(block(payments.pay("alice", id))).isEqualTo("alice:" + id + ":2");
      assertThat(block(payments.pay("bob", id))).isEqualTo("bob:" + id + ":3");
      assertThat(block(payments.pay("alice", id))).isEqualTo("alice:" + id + ":2");
      assertThat(context.getBean(IdempotencyStore.class)
          .find(IdempotencyKey.of("Payments.pay", "bob", id))).isPresent();
      assertThat(block(payments.attemptKey(id))).isNotBlank();

      Mono<Receipt> noKey = payments.charge(null, 1);
      assertThat(error(noKey)).as("a missing key is the Mono's error, not thrown by the call")
          .isInstanceOf(IdempotencyKeyMissingException.class);
    });
  }

  @Test
  void monoMethodsWhoseElementCannotBeStoredAndFluxFailTheStartup() {
    for (Class<?> bean : java.util.List.of(UnknownElement.class, UnknownBody.class,
        Many.class)) {
      new ApplicationContextRunner()
          .withConfiguration(AutoConfigurations.of(OnceAutoConfiguration.class))
          .withPropertyValues("once.store=memory")
          .withBean(bean)
          .run(context -> assertThat(context.getStartupFailure()).as(bean.getSimpleName())
              .rootCause()
              .hasMessageContaining(bean.getName() + ".call")
              .hasMessageMatching("(?s).*(not supported|is not known).*"));
    }
  }

  @Test
  void withoutOnceReactorAMonoMethodFailsTheStartupSayingWhatToAdd() {
    new ApplicationContextRunner()
        .withClassLoader(new FilteredClassLoader(OnceReactor.class))
        .withConfiguration(AutoConfigurations.of(OnceAutoConfiguration.class))
        .withPropertyValues("once.store=memory")
        .withBean(Reactive.class)
        .run(context -> assertThat(context.getStartupFailure()).rootCause()
            .hasMessageContaining(Reactive.class.getName() + ".call")
            .hasMessageContaining("dev.once:once-reactor"));
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(OnceAutoConfiguration.class))
        .withPropertyValues("once.store=memory")
        .withBean(Reactive.class)
        .run(context -> assertThat(block(context.getBean(Reactive.class).call("r-1")))
            .isEqualTo("r-1"));
  }
}
