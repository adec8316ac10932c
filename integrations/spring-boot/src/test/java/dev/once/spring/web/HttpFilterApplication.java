package dev.once.spring.web;

import dev.once.spring.TestDatabaseAccess;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;

/** A small web application for {@link HttpFilterTest}: the starter's defaults on SQLite. */
@SpringBootConfiguration
@EnableAutoConfiguration
@Import(HttpFilterApplication.Charges.class)
public class HttpFilterApplication {

  @Bean
  DataSource dataSource() {
    return TestDatabaseAccess.sqlite();
  }

  /** Charges: counts how often it really ran. */
  @RestController
  public static class Charges {
    private final AtomicInteger runs = new AtomicInteger();

    public int runs() {
      return runs.get();
    }

    @PostMapping("/charges")
    public ResponseEntity<Map<String, Object>> charge(@RequestBody Map<String, Object> body) {
      int id = runs.incrementAndGet();
      Map<String, Object> charge = new LinkedHashMap<>();
      charge.put("id", "ch_" + id);
      charge.put("amount", body.get("amount"));
      return ResponseEntity.status(201).header("Location", "/charges/ch_" + id)
          .header("Set-Cookie", "session=secret").body(charge);
    }

    @PostMapping("/charges/preview")
    public Map<String, Object> preview(@RequestBody Map<String, Object> body) {
      return Map.of("amount", body.get("amount"), "preview", true);
    }
  }
}
