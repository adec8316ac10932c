package dev.once.kafka;

import dev.once.Once;
import dev.once.redis.RedisStore;
import dev.once.testkit.EffectsFile;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * A consumer process as a service runs one: a poll loop, and a JVM shutdown hook that stops it
 * (what a SIGTERM in a rolling deploy runs). Each handled record appends its value to the effects
 * file. When it handles the record named by its last argument it prints {@code HALF} and waits
 * for the shutdown to begin, so the SIGTERM arrives with the batch half done.
 *
 * <p>Arguments: bootstrap servers, topic, group, Redis URI, effects file, record value to halt at.
 */
public final class SigtermWorker {

  private SigtermWorker() {}

  public static void main(String[] args) throws Exception {
    String bootstrap = args[0];
    String topic = args[1];
    String group = args[2];
    RedisStore store = RedisStore.builder(args[3]).build();
    Path effects = Path.of(args[4]);
    String haltAt = args[5];
    CountDownLatch terminating = new CountDownLatch(1);
    IdempotentConsumer<String, String> consumer = IdempotentConsumer.<String, String>builder(
        Once.builder(store).build(), (record, attempt) -> {
          EffectsFile.append(effects, record.value());
          if (record.value().equals(haltAt)) {
            System.out.println("HALF");
            System.out.flush();
            terminating.await(30, TimeUnit.SECONDS);
          }
        }).deadLetters(letter -> {}).pollTimeout(Duration.ofMillis(100)).build();
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
    p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "500");
    p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    // Auto-commit on, hidden from the loop: the harshest case for a stop mid-batch.
    IdempotentConsumerLoop<String, String> loop = consumer.loop(ConsumerViews.autoCommitting(p),
        List.of(topic));
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      loop.stop(); // asked before the record being handled returns: the rest is not run
      terminating.countDown();
      loop.close(); // waits for the loop: the record being handled finishes, the rest is released
      store.close();
    }));
    System.out.println("STARTED");
    loop.run();
  }
}
