package dev.once.examples.jerseyorders;

/** The body of {@code POST /orders}. */
public record OrderRequest(String customer, String sku, int quantity) {}
