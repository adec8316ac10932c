package dev.once.cli.chaos;

/**
 * A {@link ChaosBroker.Consumer} over an adapter whose consumer is a blocking loop (Kafka's poll
 * loop, NATS's and SQS's run loops): the loop runs on a thread of its own, and a failure that ends
 * it is kept for the worker's one-line error.
 */
final class ChaosLoopConsumer implements ChaosBroker.Consumer {

  private final Thread thread;
  private final String ended;
  private final Runnable close;
  private volatile Throwable failure;

  /**
   * @param ended why it stopped when the loop returned without failing
   * @param close stops the loop gracefully and closes what the consumer opened
   */
  private ChaosLoopConsumer(String threadName, Runnable loop, String ended, Runnable close) {
    this.ended = ended;
    this.close = close;
    this.thread = new Thread(() -> {
      try {
        loop.run();
      } catch (RuntimeException | Error e) {
        failure = e;
        throw e;
      }
    }, threadName);
  }

  /** Starts {@code loop} on a thread named {@code threadName}. */
  static ChaosLoopConsumer start(String threadName, Runnable loop, String ended, Runnable close) {
    ChaosLoopConsumer consumer = new ChaosLoopConsumer(threadName, loop, ended, close);
    consumer.thread.start();
    return consumer;
  }

  @Override
  public boolean running() {
    return thread.isAlive();
  }

  @Override
  public String failure() {
    Throwable t = failure;
    return t == null ? ended : ChaosBroker.causes(t);
  }

  @Override
  public void close() {
    close.run();
  }
}
