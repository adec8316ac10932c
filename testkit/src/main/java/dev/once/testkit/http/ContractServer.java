package dev.once.testkit.http;

/** A running server under {@link HttpIdempotencyContract}, on 127.0.0.1. */
public interface ContractServer extends AutoCloseable {

  /** The port it listens on. */
  int port();

  /** Stops it. */
  @Override
  void close();
}
