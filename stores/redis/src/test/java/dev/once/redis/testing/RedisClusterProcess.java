package dev.once.redis.testing;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * A private Redis Cluster for tests: {@code masters} {@link RedisServerProcess}es with
 * {@code --cluster-enabled yes} on 127.0.0.1, the 16384 slots split evenly, no replicas. Set up
 * with plain cluster commands (ADDSLOTS, MEET), so no {@code redis-cli} is needed. Can move a
 * slot to another master while clients run ({@link #migrateSlot}), which makes clients meet
 * {@code MOVED} (and, while keys move, {@code ASK}) redirects.
 *
 * <pre>{@code
 * try (RedisClusterProcess cluster = RedisClusterProcess.start(3)) {
 *   RedisClusterClient client = RedisClusterClient.create(cluster.uri());
 *   ...
 * }
 * }</pre>
 */
public final class RedisClusterProcess implements AutoCloseable {

  /** Slots in a Redis Cluster. */
  public static final int SLOTS = 16384;

  private final List<RedisServerProcess> nodes;
  private final List<String> ids;

  private RedisClusterProcess(List<RedisServerProcess> nodes, List<String> ids) {
    this.nodes = nodes;
    this.ids = ids;
  }

  /** Starts {@code masters} nodes, assigns the slots and waits until the cluster state is ok. */
  public static RedisClusterProcess start(int masters) {
    if (masters < 1) {
      throw new IllegalArgumentException("masters must be positive");
    }
    List<RedisServerProcess> nodes = new ArrayList<>();
    try {
      for (int i = 0; i < masters; i++) {
        nodes.add(RedisServerProcess.builder().clusterEnabled().start());
      }
      List<String> ids = new ArrayList<>();
      for (int i = 0; i < masters; i++) {
        RedisServerProcess node = nodes.get(i);
        ids.add((String) node.call("CLUSTER", "MYID"));
        int from = i * SLOTS / masters;
        int to = (i + 1) * SLOTS / masters;
        List<String> command = new ArrayList<>(List.of("CLUSTER", "ADDSLOTS"));
        for (int slot = from; slot < to; slot++) {
          command.add(Integer.toString(slot));
        }
        node.call(command.toArray(String[]::new));
        node.call("CLUSTER", "SET-CONFIG-EPOCH", Integer.toString(i + 1));
      }
      for (int i = 1; i < masters; i++) {
        nodes.get(0).call("CLUSTER", "MEET", nodes.get(i).host(),
            Integer.toString(nodes.get(i).port()));
      }
      RedisClusterProcess cluster = new RedisClusterProcess(nodes, ids);
      cluster.awaitConsistent();
      return cluster;
    } catch (RuntimeException e) {
      nodes.forEach(RedisServerProcess::close);
      throw e;
    }
  }

  /** The nodes, in slot order: node i first owned slots [i·16384/n, (i+1)·16384/n). */
  public List<RedisServerProcess> nodes() {
    return List.copyOf(nodes);
  }

  /** {@code redis://127.0.0.1:p1,127.0.0.1:p2,…}: every node as a seed. */
  public String uri() {
    return "redis://" + nodes.stream().map(n -> n.host() + ":" + n.port())
        .collect(Collectors.joining(","));
  }

  /** {@code redis-cluster://…}, the URI form of {@code RedisStore.builder(String)}. */
  public String storeUri() {
    return "redis-cluster://" + uri().substring("redis://".length());
  }

  /** The index of the node that owns {@code slot} now. */
  public int ownerOf(int slot) {
    for (int i = 0; i < nodes.size(); i++) {
      Object count = nodes.get(i).call("CLUSTER", "NODES");
      for (String line : ((String) count).split("\n")) {
        if (line.contains("myself") && owns(line, slot)) {
          return i;
        }
      }
    }
    throw new IllegalStateException("no node owns slot " + slot);
  }

  /**
   * Moves {@code slot} with its keys to node {@code target}, as {@code redis-cli --cluster
   * reshard} does: IMPORTING/MIGRATING, MIGRATE the keys in batches, then SETSLOT NODE everywhere.
   * Clients still addressing the old owner get {@code MOVED}.
   */
  public void migrateSlot(int slot, int target) {
    int source = ownerOf(slot);
    if (source == target) {
      return;
    }
    RedisServerProcess from = nodes.get(source);
    RedisServerProcess to = nodes.get(target);
    String s = Integer.toString(slot);
    to.call("CLUSTER", "SETSLOT", s, "IMPORTING", ids.get(source));
    from.call("CLUSTER", "SETSLOT", s, "MIGRATING", ids.get(target));
    while (true) {
      @SuppressWarnings("unchecked")
      List<Object> keys = (List<Object>) from.call("CLUSTER", "GETKEYSINSLOT", s, "100");
      if (keys.isEmpty()) {
        break;
      }
      List<String> command = new ArrayList<>(List.of("MIGRATE", to.host(),
          Integer.toString(to.port()), "", "0", "5000", "KEYS"));
      keys.forEach(k -> command.add((String) k));
      from.call(command.toArray(String[]::new));
    }
    to.call("CLUSTER", "SETSLOT", s, "NODE", ids.get(target));
    from.call("CLUSTER", "SETSLOT", s, "NODE", ids.get(target));
    for (int i = 0; i < nodes.size(); i++) {
      if (i != source && i != target) {
        nodes.get(i).call("CLUSTER", "SETSLOT", s, "NODE", ids.get(target));
      }
    }
    awaitConsistent();
  }

  /** How many keys {@code slot} holds on node {@code node}. */
  public long keysInSlot(int node, int slot) {
    return (Long) nodes.get(node).call("CLUSTER", "COUNTKEYSINSLOT", Integer.toString(slot));
  }

  private void awaitConsistent() {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (System.nanoTime() < deadline) {
      if (consistent()) {
        return;
      }
      RedisServerProcess.pause();
    }
    throw new IllegalStateException("the cluster did not become consistent: "
        + nodes.get(0).call("CLUSTER", "NODES"));
  }

  /** Every node: state ok, knows every node, and agrees on who owns what. */
  private boolean consistent() {
    String reference = null;
    for (RedisServerProcess node : nodes) {
      String info = (String) node.call("CLUSTER", "INFO");
      if (!info.contains("cluster_state:ok")
          || !info.contains("cluster_known_nodes:" + nodes.size() + "\r")) {
        return false;
      }
      String slots = slotMap((String) node.call("CLUSTER", "NODES"));
      if (reference == null) {
        reference = slots;
      } else if (!reference.equals(slots)) {
        return false;
      }
    }
    return true;
  }

  /** Node id → slots, sorted, from CLUSTER NODES (without the volatile columns). */
  private static String slotMap(String clusterNodes) {
    return clusterNodes.lines()
        .map(l -> l.split(" "))
        .map(f -> {
          StringBuilder b = new StringBuilder(f[0]);
          for (int i = 8; i < f.length; i++) {
            if (!f[i].startsWith("[")) {
              b.append(' ').append(f[i]);
            }
          }
          return b.toString();
        })
        .sorted()
        .collect(Collectors.joining("\n"));
  }

  private static boolean owns(String nodesLine, int slot) {
    String[] f = nodesLine.split(" ");
    for (int i = 8; i < f.length; i++) {
      if (f[i].startsWith("[")) {
        continue;
      }
      String[] range = f[i].split("-");
      int lo = Integer.parseInt(range[0]);
      int hi = range.length > 1 ? Integer.parseInt(range[1]) : lo;
      if (slot >= lo && slot <= hi) {
        return true;
      }
    }
    return false;
  }

  /** Kills every node and deletes their directories. */
  @Override
  public void close() {
    nodes.forEach(RedisServerProcess::close);
  }
}
