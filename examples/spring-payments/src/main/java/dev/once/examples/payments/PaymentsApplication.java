package dev.once.examples.payments;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * A payments API: {@code POST /charges} debits a wallet in PostgreSQL. The Once starter makes
 * retries safe twice over: its HTTP filter answers a retried request with the original response,
 * and {@link Wallets#charge} debits exactly once per key even if the process dies between the
 * debit and the filter's stored response.
 */
@SpringBootApplication
public class PaymentsApplication {

  public static void main(String[] args) {
    SpringApplication.run(PaymentsApplication.class, args);
  }
}
