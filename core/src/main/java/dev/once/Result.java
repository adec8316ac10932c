package dev.once;

/**
 * What {@link Once#call} returns: the value, whether it was replayed from the store rather than
 * computed now, and the fencing token of the attempt that produced it.
 *
 * @param <T> the result type
 */
public record Result<T>(T value, boolean replayed, long token) {}
