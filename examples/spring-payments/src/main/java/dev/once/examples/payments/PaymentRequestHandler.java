package dev.once.examples.payments;

import dev.once.Attempt;
import dev.once.batch.MessageHandler;
import org.springframework.amqp.core.Message;
import tools.jackson.databind.json.JsonMapper;

/**
 * Handles a payment request from the {@code payments} queue: a JSON {@link ChargeRequest} whose
 * {@code message-id} is its idempotency key. Runs once per key however often RabbitMQ delivers
 * it; the wallet is debited under the attempt's stable key, so even a re-run after a crash (before
 * the outcome was stored) replays the committed charge instead of debiting again.
 */
public class PaymentRequestHandler implements MessageHandler<Message> {

  private final Payments payments;
  private final JsonMapper json;

  public PaymentRequestHandler(Payments payments, JsonMapper json) {
    this.payments = payments;
    this.json = json;
  }

  @Override
  public void handle(Message message, Attempt attempt) {
    ChargeRequest request = json.readValue(message.getBody(), ChargeRequest.class);
    payments.charge(attempt.key(), request); // insufficient funds: final, dead-lettered
  }
}
