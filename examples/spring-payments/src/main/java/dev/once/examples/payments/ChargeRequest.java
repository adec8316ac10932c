package dev.once.examples.payments;

/** The body of {@code POST /charges}: which wallet, how many cents. */
public record ChargeRequest(String wallet, long amount) {}
