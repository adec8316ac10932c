package dev.once.examples.jerseyorders;

/** An order as stored and answered; {@code total} in cents. */
public record Order(String id, String customer, String sku, int quantity, long total) {}
