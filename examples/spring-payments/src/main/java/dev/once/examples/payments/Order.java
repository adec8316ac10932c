package dev.once.examples.payments;

/**
 * The body of {@code POST /orders}: {@code quantity} of {@code sku}, paid {@code amount} cents from
 * {@code wallet}, delivered to {@code address}, the receipt mailed to {@code email}.
 */
public record Order(String wallet, String sku, int quantity, long amount, String address,
    String email) {}
