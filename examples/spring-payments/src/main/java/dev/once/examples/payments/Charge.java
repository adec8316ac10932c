package dev.once.examples.payments;

/** A charge made: its id, the wallet, the amount and the wallet's balance after it. */
public record Charge(String id, String wallet, long amount, long balance) {}
