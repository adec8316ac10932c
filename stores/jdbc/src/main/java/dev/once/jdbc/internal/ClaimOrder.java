package dev.once.jdbc.internal;

/**
 * Which step a claim on PostgreSQL sends first, learned from the claims before it.
 *
 * <p>Insert-first costs a new key one round trip (the {@code INSERT}) and a duplicate two (the
 * {@code INSERT} that finds the key, then the read). Read-first costs a duplicate one (a plain
 * read by primary key, cheaper still than an insert that finds the key) and a new key two. No
 * single statement does both in one round trip without taxing new keys: a CTE that inserts and
 * reads cost new keys 7–19% of their throughput when measured
 * ({@code PostgresSchemaBenchmark}), so each claim instead takes the order that suits the recent
 * stream: claims report whether they met an existing row (a batch claim once, whether most of its
 * keys did: one choice of order), and while more than half of the recent
 * ones did, claims read first. A stream of new keys therefore sends exactly the statements it
 * always did, a stream of duplicates (a consumer re-reading a partition, retrying clients) is
 * answered in one round trip each, and a switch costs at most one extra round trip per claim
 * for a few claims. Both orders are correct whatever the stream: only their cost differs.
 *
 * <p>Thread-safe without locks: the share is one volatile int updated racily; an update lost to
 * a concurrent one only slows the learning down.
 */
public final class ClaimOrder {

  /** The weight each claim has in the share: 1/16, so a switch follows within a few dozen. */
  private static final int SHIFT = 4;
  /** 1.0 in the share's fixed point. */
  private static final int ONE = 1 << 20;

  private final boolean fixed;
  /** The recent share of claims that met an existing row, in [0, ONE]. */
  private volatile int duplicates;

  private ClaimOrder(boolean fixed, int duplicates) {
    this.fixed = fixed;
    this.duplicates = duplicates;
  }

  /** Learns from the claims; starts insert-first. */
  public static ClaimOrder adaptive() {
    return new ClaimOrder(false, 0);
  }

  /** Always reads first ({@code true}) or always inserts first: for tests of each path. */
  public static ClaimOrder fixed(boolean readFirst) {
    return new ClaimOrder(true, readFirst ? ONE : 0);
  }

  /** A new order of the same kind for another stream of claims: a fixed one is shared. */
  ClaimOrder another() {
    return fixed ? this : adaptive();
  }

  /** Whether the next claim should read before it inserts. */
  boolean readFirst() {
    return duplicates > ONE / 2;
  }

  /** Records what a claim met: an existing row ({@code true}) or none. */
  void record(boolean existing) {
    if (fixed) {
      return;
    }
    int d = duplicates;
    duplicates = d + (((existing ? ONE : 0) - d) >> SHIFT);
  }
}
