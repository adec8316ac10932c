package dev.once.examples.lambdasqs;

/** What shipping an order returns; stored by Once and replayed to duplicates. */
public record ShipmentReceipt(String orderId, String trackingNumber) {}
