package dev.once.examples.webfluxorders;

/** A charge the card gateway made; {@code amount} in cents. */
public record CardCharge(String id, String order, long amount) {}
