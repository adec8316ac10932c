package dev.once.examples.payments;

/** An order placed: its stock reservation, its charge and its delivery's tracking number. */
public record OrderReceipt(String reservation, String charge, String tracking) {}
