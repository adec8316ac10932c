package dev.once.examples.webfluxorders;

/** An order as stored and answered; {@code total} in cents. */
public record Order(String id, String customer, String sku, int quantity, long total) {}
