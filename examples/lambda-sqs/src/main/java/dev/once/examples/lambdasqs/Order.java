package dev.once.examples.lambdasqs;

/** The body of an order message: {@code {"orderId":"o-1","sku":"book-42","quantity":2}}. */
public record Order(String orderId, String sku, int quantity) {}
