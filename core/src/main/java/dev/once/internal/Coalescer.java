package dev.once.internal;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Function;

/**
 * Runs the concurrent requests of one kind (claims, completions) as shared batch calls, as a
 * database's group commit does: a request joins the queue; when fewer than {@code parallelism}
 * calls are in flight, its caller becomes a leader at once and makes one call for everything
 * queued (up to {@code maxBatch}, in arrival order). A lone caller makes its own single call
 * immediately — no fixed wait, so its latency does not change — and callers that arrive while
 * every call slot is busy share the next call, so under load one round trip serves many callers
 * while the store still works on several calls at once.
 *
 * <p>A batch call that fails is repeated request by request (each caller then gets its own
 * answer or failure), so one request the store refuses cannot fail the others. That is safe
 * because stores apply a batch all or nothing and recognise a re-sent command as their own.
 *
 * @param <Q> a request
 * @param <R> its answer
 */
final class Coalescer<Q, R> {

  private final int maxBatch;
  private final int parallelism;
  private final Function<Q, R> single;
  private final Function<List<Q>, List<R>> batch;
  private final ReentrantLock lock = new ReentrantLock();
  private final ArrayDeque<Pending<Q, R>> queue = new ArrayDeque<>();
  /** How many leaders are calling the store. Guarded by {@link #lock}. */
  private int calling;

  /**
   * @param parallelism how many calls may be in flight at once
   * @param single one request alone (a lone caller, and the fallback of a failed batch)
   * @param batch  many at once: one answer per request, in order
   */
  Coalescer(int maxBatch, int parallelism, Function<Q, R> single,
      Function<List<Q>, List<R>> batch) {
    this.maxBatch = maxBatch;
    this.parallelism = parallelism;
    this.single = single;
    this.batch = batch;
  }

  /** The answer to {@code request}, from a call it shares with the requests queued with it. */
  R call(Q request) {
    lock.lock();
    try {
      Pending<Q, R> mine = new Pending<>(request, lock.newCondition());
      queue.add(mine);
      while (!mine.done) {
        if (calling >= parallelism || queue.isEmpty()) {
          // Woken only when answered, or to lead the next call: not by every call that ends.
          mine.wake.awaitUninterruptibly();
          continue;
        }
        calling++;
        List<Pending<Q, R>> taken = new ArrayList<>(Math.min(queue.size(), maxBatch));
        while (!queue.isEmpty() && taken.size() < maxBatch) {
          taken.add(queue.poll());
        }
        if (!queue.isEmpty() && calling < parallelism) {
          queue.peek().wake.signal(); // more than one call's worth, and a free slot: lead it
        }
        lock.unlock();
        try {
          run(taken);
        } finally {
          lock.lock();
          calling--;
          for (Pending<Q, R> p : taken) {
            p.wake.signal();
          }
          Pending<Q, R> next = queue.peek();
          if (next != null) {
            next.wake.signal(); // the oldest waiting request leads the next call
          }
        }
      }
      return mine.answer();
    } finally {
      lock.unlock();
    }
  }

  /** How many requests wait for a call (for tests). */
  int queued() {
    lock.lock();
    try {
      return queue.size();
    } finally {
      lock.unlock();
    }
  }

  private void run(List<Pending<Q, R>> taken) {
    if (taken.size() > 1) {
      List<Q> requests = new ArrayList<>(taken.size());
      for (Pending<Q, R> p : taken) {
        requests.add(p.request);
      }
      List<R> answers = null;
      try {
        answers = batch.apply(requests);
      } catch (RuntimeException e) {
        // Fall through: each request alone (below), so each caller gets its own answer.
      } catch (Error e) {
        // Every caller must learn of it, or it would wait for an answer forever.
        for (Pending<Q, R> p : taken) {
          p.fail(e);
        }
        return;
      }
      if (answers != null && answers.size() == taken.size()) {
        for (int i = 0; i < taken.size(); i++) {
          taken.get(i).succeed(answers.get(i));
        }
        return;
      }
    }
    for (Pending<Q, R> p : taken) {
      try {
        p.succeed(single.apply(p.request));
      } catch (RuntimeException | Error e) {
        p.fail(e);
      }
    }
  }

  /** One caller's request and, once done, its answer or failure. */
  private static final class Pending<Q, R> {
    final Q request;
    /** Signalled when answered, or when this request's caller may lead the next call. */
    final Condition wake;
    /** Set by the leader before it takes the lock again; read under the lock. */
    boolean done;
    R answer;
    Throwable failure;

    Pending(Q request, Condition wake) {
      this.request = request;
      this.wake = wake;
    }

    void succeed(R value) {
      answer = value;
      done = true;
    }

    void fail(Throwable e) {
      failure = e;
      done = true;
    }

    R answer() {
      if (failure instanceof RuntimeException e) {
        throw e;
      }
      if (failure instanceof Error e) {
        throw e;
      }
      return answer;
    }
  }
}
