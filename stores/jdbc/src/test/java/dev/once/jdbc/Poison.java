package dev.once.jdbc;

import dev.once.IdempotencyKey;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A fault inside the real database: triggers that raise for one key on every insert and update of
 * its row, so that every claim of that key fails in the database itself (PostgreSQL: a plpgsql
 * function and a {@code BEFORE INSERT OR UPDATE} trigger; MariaDB: {@code SIGNAL SQLSTATE '45000'}
 * in a {@code BEFORE INSERT} and a {@code BEFORE UPDATE} trigger; SQLite: {@code RAISE(ABORT)}
 * likewise). {@link #heal} drops them.
 */
final class Poison {

  private static final AtomicInteger NEXT = new AtomicInteger();
  private static final Map<IdempotencyKey, String> NAMES = new ConcurrentHashMap<>();

  private Poison() {}

  /** Makes every write of {@code key}'s row in {@code store}'s table fail. */
  static void inject(JdbcStore store, IdempotencyKey key) {
    String name = "once_poison_" + NEXT.incrementAndGet();
    NAMES.put(key, name);
    String table = store.table();
    String match = "NEW.scope = " + literal(key.scope()) + " AND NEW.tenant = "
        + literal(key.tenant()) + " AND NEW.idem_key = " + literal(key.key());
    List<String> ddl;
    switch (store.dialect()) {
      case POSTGRESQL:
        ddl = List.of("CREATE FUNCTION " + name + "() RETURNS trigger LANGUAGE plpgsql AS $$"
                + " BEGIN IF " + match + " THEN RAISE EXCEPTION 'poisoned key %', NEW.idem_key"
                + " USING ERRCODE = 'P0001'; END IF; RETURN NEW; END $$",
            "CREATE TRIGGER " + name + " BEFORE INSERT OR UPDATE ON " + table
                + " FOR EACH ROW EXECUTE FUNCTION " + name + "()");
        break;
      case MARIADB:
        ddl = List.of(mariaDbTrigger(name + "_ins", "INSERT", table, match),
            mariaDbTrigger(name + "_upd", "UPDATE", table, match));
        break;
      default:
        ddl = List.of(sqliteTrigger(name + "_ins", "INSERT", table, match),
            sqliteTrigger(name + "_upd", "UPDATE", table, match));
    }
    run(store, ddl);
  }

  /** Drops what {@link #inject} made for {@code key}. */
  static void heal(JdbcStore store, IdempotencyKey key) {
    String name = NAMES.remove(key);
    if (name == null) {
      return;
    }
    if (store.dialect() == JdbcDialect.POSTGRESQL) {
      run(store, List.of("DROP TRIGGER IF EXISTS " + name + " ON " + store.table(),
          "DROP FUNCTION IF EXISTS " + name + "()"));
    } else {
      run(store, List.of("DROP TRIGGER IF EXISTS " + name + "_ins",
          "DROP TRIGGER IF EXISTS " + name + "_upd"));
    }
  }

  private static String mariaDbTrigger(String name, String event, String table, String match) {
    return "CREATE TRIGGER " + name + " BEFORE " + event + " ON " + table + " FOR EACH ROW"
        + " BEGIN IF " + match + " THEN SIGNAL SQLSTATE '45000'"
        + " SET MESSAGE_TEXT = 'poisoned key'; END IF; END";
  }

  private static String sqliteTrigger(String name, String event, String table, String match) {
    return "CREATE TRIGGER " + name + " BEFORE " + event + " ON " + table + " FOR EACH ROW"
        + " WHEN " + match + " BEGIN SELECT RAISE(ABORT, 'poisoned key'); END";
  }

  private static String literal(String s) {
    return "'" + s.replace("'", "''") + "'";
  }

  private static void run(JdbcStore store, List<String> statements) {
    try (Connection c = Databases.dataSource(store.dialect()).getConnection();
        Statement s = c.createStatement()) {
      for (String sql : statements) {
        s.execute(sql);
      }
    } catch (SQLException e) {
      throw new IllegalStateException("injecting or healing the fault failed: " + e, e);
    }
  }
}
