package dev.once.redis.internal;

import static dev.once.redis.internal.RedisCalls.number;
import static dev.once.redis.internal.RedisCalls.send;

import dev.once.IdempotencyKey;
import dev.once.StoreUnavailableException;
import dev.once.spi.ClaimRules;
import dev.once.spi.IdempotencyRecord;
import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.ScanArgs;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;

/**
 * Maintenance: purge (delete expired records) and reap (turn IN_PROGRESS records whose lease
 * passed into FAILED). Both walk the keyspace with {@code SCAN} (in a cluster, master by master),
 * read each page's records (pipelined), and change each due one by {@link Script#SWAP}, so that a
 * record changed since it was read is left alone. Redis's own key expiry is what collects records
 * in production; these are for a caller's clock ahead of Redis's, and for dashboards.
 */
final class RedisSweeps {

  /** Keys a {@code SCAN} call of purge and reap asks for. */
  private static final int SCAN_PAGE = 1000;

  private final RedisCalls calls;
  private final KeyLayout layout;

  RedisSweeps(RedisCalls calls, KeyLayout layout) {
    this.calls = calls;
    this.layout = layout;
  }

  int purgeExpired(Instant now, int limit) {
    return sweep(now, limit, true);
  }

  int reapExpiredLeases(Instant now, int limit) {
    return sweep(now, limit, false);
  }

  /**
   * Purge or reap, up to {@code limit} records. A failure once a change was sent says it may have
   * been applied.
   */
  private int sweep(Instant now, int limit, boolean purge) {
    Objects.requireNonNull(now, "now");
    if (limit <= 0) {
      throw new IllegalArgumentException("limit must be positive, was " + limit);
    }
    String what = purge ? "purge of expired records" : "reap of expired leases";
    RedisAccess redis = calls.access(what);
    ScanArgs args = ScanArgs.Builder.matches(layout.pattern()).limit(SCAN_PAGE);
    int done = 0;
    boolean changing = false;
    try {
      KeyScanCursor<byte[]> page = null;
      while (done < limit && (page == null || !page.isFinished())) {
        KeyScanCursor<byte[]> cursor = page;
        page = calls.await(send(() -> cursor == null ? redis.commands().scan(args)
            : redis.commands().scan(cursor, args)), calls.deadline(), what);
        List<byte[]> keys = page.getKeys();
        List<CompletableFuture<byte[]>> values = new ArrayList<>(keys.size());
        for (byte[] key : keys) {
          values.add(send(() -> redis.commands().get(key)));
        }
        long deadline = calls.deadline();
        List<Change> due = new ArrayList<>();
        for (int i = 0; i < keys.size(); i++) {
          byte[] value = calls.await(values.get(i), deadline, what);
          IdempotencyRecord record = value == null ? null : readable(keys.get(i), value);
          if (record == null) {
            continue; // gone since the SCAN, or not ours: a value that is not a record is left alone
          }
          if (purge && record.isExpired(now)) {
            due.add(new Change(keys.get(i), value, null));
          } else if (!purge) {
            IdempotencyRecord reaped = ClaimRules.reaped(record, now);
            if (reaped != null) {
              due.add(new Change(keys.get(i), value, RecordFormat.encode(reaped)));
            }
          }
        }
        for (int from = 0; from < due.size() && done < limit; ) {
          int to = Math.min(due.size(), from + limit - done);
          List<CompletableFuture<List<Object>>> swaps = new ArrayList<>(to - from);
          changing = true;
          for (Change change : due.subList(from, to)) {
            swaps.add(RedisCalls.swap(redis, change.key(), change.read(), change.next(), 0));
          }
          deadline = calls.deadline();
          for (CompletableFuture<List<Object>> swap : swaps) {
            if (number(calls.await(swap, deadline, what).get(0)) == 1L) {
              done++;
            }
          }
          from = to;
        }
      }
    } catch (StoreUnavailableException e) {
      throw changing ? RedisCalls.mayHaveBeenApplied(e) : e;
    }
    return done;
  }

  /** A due record of a sweep: its key, the value read, what replaces it (null: delete). */
  private record Change(byte[] key, byte[] read, byte[] next) {}

  /** The record at {@code key}, or null when the value is not one (left alone by maintenance). */
  private IdempotencyRecord readable(byte[] key, byte[] value) {
    IdempotencyKey idempotencyKey = layout.idempotencyKey(key);
    if (idempotencyKey == null) {
      return null;
    }
    try {
      return RecordFormat.decode(idempotencyKey, value);
    } catch (IllegalStateException notARecord) {
      return null;
    }
  }
}
