package dev.once.redis.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.StoreUnavailableException;
import dev.once.redis.testing.RedisServerProcess;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * A Sentinel's switch ({@link RedisConnector#reopen()}) that comes while a connection is being
 * opened, on the address a Sentinel gave just before the switch: that connection must not be
 * kept, nor handed to the call waiting for it (found by a review; seen failing: the store kept
 * it and wrote to the old primary).
 */
class RedisConnectorReopenRaceTest {

  @Test
  void aSwitchWhileAConnectionIsOpeningDiscardsThatConnection() throws Exception {
    try (RedisServerProcess redis = RedisServerProcess.start()) {
      RedisClient client = RedisClient.create();
      ExecutorService caller = Executors.newSingleThreadExecutor();
      try {
        CompletableFuture<RedisAccess> opening = new CompletableFuture<>();
        List<CompletableFuture<RedisAccess>> attempts = List.of(opening,
            RedisAccess.standaloneAsync(client, RedisURI.create(redis.uri()), "after"));
        AtomicInteger opens = new AtomicInteger();
        RedisConnector connector = new RedisConnector(
            () -> attempts.get(opens.getAndIncrement()), "test", Duration.ofSeconds(10), null);

        Future<RedisAccess> waiting = caller.submit(() -> connector.access("claim"));
        while (opens.get() == 0) {
          Thread.onSpinWait(); // the attempt is under way
        }
        connector.reopen(); // the Sentinels switched
        RedisAccess before = RedisAccess.standaloneAsync(client, RedisURI.create(redis.uri()),
            "before").get(10, TimeUnit.SECONDS);
        opening.complete(before); // the attempt opened on the old address

        assertThatThrownBy(() -> waiting.get(10, TimeUnit.SECONDS))
            .isInstanceOf(ExecutionException.class)
            .cause().isInstanceOf(StoreUnavailableException.class)
            .hasMessageContaining("nothing was sent")
            .matches(e -> !((StoreUnavailableException) e).mayHaveBeenApplied());
        RedisAccess next = connector.access("next claim");
        assertThat(next).isNotSameAs(before);
        assertThat(opens.get()).as("a new connection opened after the switch").isEqualTo(2);
        connector.close();
      } finally {
        caller.shutdownNow();
        client.shutdown();
      }
    }
  }
}
