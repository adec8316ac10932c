package dev.once.examples.payments;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * A payments service: {@code POST /charges} debits a wallet in PostgreSQL. The Once starter makes
 * retries safe twice over: its HTTP filter answers a retried request with the original response,
 * and {@link Wallets#charge} debits exactly once per key even if the process dies between the
 * debit and the filter's stored response. {@code POST /orders} ({@link OrderController}) runs the
 * {@link Checkout} saga once per {@code Idempotency-Key}, and {@link PaymentRequests} charges each
 * payment request from RabbitMQ once however often it is delivered.
 */
@SpringBootApplication
public class PaymentsApplication {

  public static void main(String[] args) {
    SpringApplication.run(PaymentsApplication.class, args);
  }
}
