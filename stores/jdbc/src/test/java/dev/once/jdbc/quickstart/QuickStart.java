package dev.once.jdbc.quickstart;

// README:begin
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.Once;
import dev.once.jackson.JsonCodec;
import dev.once.jdbc.JdbcStore;
import java.nio.file.Path;

public final class QuickStart {

  record Charge(String id, String customer, long amount) {}

  static int charges; // stands for your payment gateway

  public static void main(String[] args) {
    Path file = Path.of(args.length > 0 ? args[0] : "once.db");
    try (JdbcStore store = JdbcStore.sqlite(file)) {  // PostgreSQL: JdbcStore.builder(dataSource).build()
      store.createSchema();                            // or apply JdbcDialect's DDL with Flyway
      Once once = Once.builder(store).build();

      for (int delivery = 1; delivery <= 3; delivery++) {           // one request, delivered 3 times
        Charge charge = once.execute(
            IdempotencyKey.of("payments.charge", "order-42"),        // the client's idempotency key
            Fingerprint.of("cus_1:1250"),                            // same key, other request: refused
            JsonCodec.of(Charge.class),                              // how the outcome is stored
            attempt -> new Charge("ch_" + ++charges, "cus_1", 1250)); // the effect; pass attempt.key()
        System.out.println("delivery " + delivery + ": " + charge);  //   downstream where it dedupes
      }
      System.out.println("charged " + charges + " time(s)");         // charged 1 time(s)
    }
  }
}
// README:end
