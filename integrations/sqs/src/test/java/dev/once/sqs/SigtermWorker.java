package dev.once.sqs;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.once.Once;
import dev.once.jdbc.JdbcDialect;
import dev.once.jdbc.JdbcStore;
import dev.once.testkit.EffectsFile;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.sqs.SqsClient;

/**
 * A consumer process as a service runs one: a receive loop, and a JVM shutdown hook that stops it
 * (what a SIGTERM in a rolling deploy runs). Each handled message appends its body to the effects
 * file. When it handles the message whose body is its last argument it prints {@code HALF} and
 * waits for the shutdown to begin, so the SIGTERM arrives with the batch half done.
 *
 * <p>Arguments: SQS endpoint (the test's ElasticMQ), queue URL, JDBC URL (PostgreSQL, with user
 * and password), store table, effects file, body to halt at, visibility timeout in seconds.
 */
public final class SigtermWorker {

  private SigtermWorker() {}

  public static void main(String[] args) throws Exception {
    SqsClient sqs = SqsClient.builder()
        .endpointOverride(URI.create(args[0]))
        .region(Region.US_EAST_1)
        .credentialsProvider(StaticCredentialsProvider.create(
            AwsBasicCredentials.create("test", "test")))
        .build();
    String queueUrl = args[1];
    HikariConfig config = new HikariConfig();
    config.setPoolName("sigterm-worker");
    config.setMaximumPoolSize(2);
    config.setJdbcUrl(args[2]);
    HikariDataSource dataSource = new HikariDataSource(config);
    JdbcStore store = JdbcStore.builder(dataSource).dialect(JdbcDialect.POSTGRESQL).table(args[3])
        .build();
    Path effects = Path.of(args[4]);
    String haltAt = args[5];
    Duration visibility = Duration.ofSeconds(Long.parseLong(args[6]));
    CountDownLatch terminating = new CountDownLatch(1);
    IdempotentSqsConsumer consumer = IdempotentSqsConsumer.builder(
        Once.builder(store).build(), sqs, queueUrl, (message, attempt) -> {
          EffectsFile.append(effects, message.body());
          if (message.body().equals(haltAt)) {
            System.out.println("HALF");
            System.out.flush();
            terminating.await(30, TimeUnit.SECONDS);
          }
        })
        // Receives of at most 10 each, gathered while messages come: the 20 the test sent before
        // this process started make one batch.
        .batchSize(20)
        .visibilityTimeout(visibility)
        .build();
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      // The stop is requested while the message in hand is still being handled, as when a
      // SIGTERM lands in the middle of a handler; only then does that handler return. (Counting
      // down first would let the batch run on into the next message before the stop is asked.)
      consumer.stop();
      terminating.countDown();
      // Waits for the loop: the message being handled finishes, the final ones are deleted, the
      // rest of the batch is released and made visible again.
      consumer.close();
      sqs.close();
      dataSource.close();
    }));
    System.out.println("STARTED");
    System.out.flush();
    consumer.run();
  }
}
