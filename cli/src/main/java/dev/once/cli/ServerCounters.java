package dev.once.cli;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Locale;
import java.util.stream.Stream;
import javax.sql.DataSource;

/**
 * What {@code once bench} reads around each measured side, to report the cost of one operation
 * and not only the rate: this JVM's CPU time, the server's CPU time where it can be read from here,
 * and on PostgreSQL the WAL written. Each is a running total; the bench takes differences.
 */
interface ServerCounters extends AutoCloseable {

  /** The server's CPU time so far in nanoseconds, or -1 when it cannot be read from here. */
  long cpuNanos();

  /** The WAL written so far in bytes, or -1 when the store keeps none that can be read. */
  long walBytes();

  /** Where the server CPU figure comes from, for the report; null when there is none. */
  String cpuSource();

  @Override
  default void close() {}

  /** This JVM's CPU time so far (every thread: callers, the pool, the GC, the JIT). */
  static long jvmCpuNanos() {
    if (ManagementFactory.getOperatingSystemMXBean()
        instanceof com.sun.management.OperatingSystemMXBean os) {
      return os.getProcessCpuTime();
    }
    return -1;
  }

  /** Nothing to read: the in-memory store, SQLite (in this JVM), MariaDB, a remote server. */
  ServerCounters NONE = new ServerCounters() {
    @Override
    public long cpuNanos() {
      return -1;
    }

    @Override
    public long walBytes() {
      return -1;
    }

    @Override
    public String cpuSource() {
      return null;
    }
  };

  /**
   * PostgreSQL: WAL from {@code pg_current_wal_insert_lsn()} through {@code pool} (the WAL
   * written by the statements; {@code pg_current_wal_lsn()}, the position written out, lags it
   * by up to the WAL writer's delay where commits are asynchronous, which made a short window
   * read a fraction of its WAL); CPU, when the server
   * is on this host, as the CPU time of every process named {@code postgres} here (its
   * backends, background writers, WAL writer and autovacuum workers; also those of any other
   * PostgreSQL server on this host, which should be idle while the bench runs).
   */
  static ServerCounters postgres(DataSource pool, String host) {
    boolean local = isLocal(host) && Files.isReadable(Path.of("/proc/self/stat"));
    return new ServerCounters() {
      @Override
      public long cpuNanos() {
        return local ? processCpuNanos("postgres") : -1;
      }

      @Override
      public long walBytes() {
        try (Connection c = pool.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery(
                 "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::bigint")) {
          return rs.next() ? rs.getLong(1) : -1;
        } catch (SQLException e) {
          return -1; // a standby, or no right to read it
        }
      }

      @Override
      public String cpuSource() {
        return local ? "postgres processes on this host" : null;
      }
    };
  }

  /**
   * Redis: the server's own CPU time ({@code used_cpu_sys + used_cpu_user} of {@code INFO cpu}),
   * read on a connection of its own, so wherever the server runs.
   */
  static ServerCounters redis(String uri) {
    io.lettuce.core.RedisClient client = io.lettuce.core.RedisClient.create(uri);
    io.lettuce.core.api.StatefulRedisConnection<String, String> connection;
    try {
      connection = client.connect();
    } catch (RuntimeException e) {
      client.shutdown();
      return NONE;
    }
    return new ServerCounters() {
      @Override
      public long cpuNanos() {
        try {
          return redisCpuNanos(connection.sync().info("cpu"));
        } catch (RuntimeException e) {
          return -1;
        }
      }

      @Override
      public long walBytes() {
        return -1;
      }

      @Override
      public String cpuSource() {
        return "Redis INFO cpu";
      }

      @Override
      public void close() {
        connection.close();
        client.shutdown();
      }
    };
  }

  /** {@code used_cpu_sys + used_cpu_user} of an {@code INFO cpu} text, in nanoseconds; -1 if absent. */
  static long redisCpuNanos(String info) {
    double seconds = 0;
    int found = 0;
    for (String line : info.split("\\r?\\n")) {
      if (line.startsWith("used_cpu_sys:") || line.startsWith("used_cpu_user:")) {
        seconds += Double.parseDouble(line.substring(line.indexOf(':') + 1).trim());
        found++;
      }
    }
    return found == 2 ? Math.round(seconds * 1e9) : -1;
  }

  /** The CPU time (user + system) of every process on this host whose name is {@code name}. */
  static long processCpuNanos(String name) {
    long ticks = 0;
    try (Stream<Path> processes = Files.list(Path.of("/proc"))) {
      for (Path p : (Iterable<Path>) processes::iterator) {
        String pid = p.getFileName().toString();
        if (!pid.chars().allMatch(Character::isDigit)) {
          continue;
        }
        try {
          String stat = Files.readString(p.resolve("stat"));
          // "pid (comm) state ..." — comm may hold spaces, so split after its closing bracket.
          int open = stat.indexOf('(');
          int close = stat.lastIndexOf(')');
          if (!stat.substring(open + 1, close).equals(name)) {
            continue;
          }
          String[] fields = stat.substring(close + 2).split(" ");
          // After comm: state is field 3; utime and stime are fields 14 and 15.
          ticks += Long.parseLong(fields[11]) + Long.parseLong(fields[12]);
        } catch (IOException | RuntimeException gone) {
          // The process ended meanwhile.
        }
      }
    } catch (IOException e) {
      return -1;
    }
    return ticks * (1_000_000_000L / CLOCK_TICKS_PER_SECOND);
  }

  /** Linux's USER_HZ, the unit of /proc/[pid]/stat times: 100 on every mainstream architecture. */
  long CLOCK_TICKS_PER_SECOND = 100;

  private static boolean isLocal(String host) {
    String h = host == null ? "" : host.toLowerCase(Locale.ROOT);
    return h.equals("localhost") || h.equals("127.0.0.1") || h.equals("::1") || h.equals("[::1]")
        || h.isEmpty();
  }
}
