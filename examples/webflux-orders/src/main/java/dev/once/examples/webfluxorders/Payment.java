package dev.once.examples.webfluxorders;

/**
 * The answer of {@code POST /orders/{id}/payment}: how much of the total the store credit covered,
 * and the card charge for the rest ({@code cardCharge} null when the credit covered it all).
 */
public record Payment(String order, long total, long byStoreCredit, String cardCharge) {}
