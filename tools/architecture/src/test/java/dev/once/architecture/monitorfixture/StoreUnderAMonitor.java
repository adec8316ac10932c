package dev.once.architecture.monitorfixture;

import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.IdempotencyStore;
import java.sql.Connection;
import java.sql.SQLException;
import javax.sql.DataSource;

/**
 * A deliberately broken class for {@code NoMonitorAcrossStoreCallsTest}: monitors held across a
 * store call (a synchronized method; a synchronized block through a helper) and across JDBC, next
 * to monitors that are released before the call (not violations).
 */
public final class StoreUnderAMonitor {

  private final Object lock = new Object();
  private int claims;

  /** Broken: the monitor of this object is held across the store's round trip. */
  public synchronized Claim claimInASynchronizedMethod(IdempotencyStore store,
      ClaimRequest request) {
    claims++;
    return store.claim(request);
  }

  /** Broken: the block calls a helper that calls the store. */
  public Claim claimThroughAHelper(IdempotencyStore store, ClaimRequest request) {
    synchronized (lock) {
      claims++;
      return helper(store, request);
    }
  }

  /** Broken: a connection taken (and waited for, in a pool) under the monitor. */
  public void jdbcInABlock(DataSource pool) throws SQLException {
    synchronized (lock) {
      try (Connection c = pool.getConnection()) {
        claims++;
      }
    }
  }

  /** Fine: the monitor guards the counter only; the store is called after it is released. */
  public Claim claimAfterTheMonitor(IdempotencyStore store, ClaimRequest request) {
    synchronized (lock) {
      claims++;
    }
    return helper(store, request);
  }

  private static Claim helper(IdempotencyStore store, ClaimRequest request) {
    return store.claim(request);
  }
}
