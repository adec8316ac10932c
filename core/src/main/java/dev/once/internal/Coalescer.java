package dev.once.internal;

import dev.once.OnceListener;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Function;
import java.util.function.LongSupplier;

/**
 * Runs the concurrent requests of one kind (claims, completions) as shared batch calls when, and
 * only when, more callers want the store than it can serve at once, as a database's group commit
 * does.
 *
 * <p>What decides is the <b>demand</b>: how many callers are in the store's coalescers at this
 * moment (this one and its siblings: a call's claim and its completion count as one caller each
 * while they wait or call). While the demand is at most {@code callsAlone}, a caller that finds
 * nobody queued and fewer than {@code callsAlone} calls in flight makes its own single call at
 * once: a lone caller, or as many callers as the store has connections for, pay nothing for
 * coalescing (no wait, no hand-off, no allocation). Above it, callers would queue for a
 * connection anyway; they queue here instead, at most {@code batchCalls} calls are in flight, and
 * each call that ends hands its slot, with every request queued (up to {@code maxBatch}, oldest
 * first), to the oldest waiting caller. Under sustained load a few large batches cost the store
 * far less per request than many small calls (one statement and one commit for many keys). The
 * demand counts the callers in sibling coalescers because callers answered together by one batch
 * arrive together at the next: an empty queue at that moment says nothing about the load.
 *
 * <p>Hand-offs cost one wake-up each: a leader that has its answers sets each caller's answer and
 * wakes that caller alone (it does not take the lock again), and hands its slot to the oldest
 * waiting caller, which takes its batch from the queue when it wakes (so that callers queued
 * meanwhile join it). The lock guards only the queue and the count of calls in flight, never a
 * store call.
 *
 * <p>A batch call that fails is repeated request by request, each by its own caller on its own
 * thread and at once (each caller then gets its own answer or failure, in an outage after one
 * more call rather than after everyone's ahead of it), so one request the store refuses cannot
 * fail the others. That is safe because stores apply a batch all or nothing and recognise a
 * re-sent command as their own.
 *
 * <p>Two escapes keep a queued caller from waiting on what it does not need:
 * <ul>
 *   <li><b>When the demand falls</b> to {@code callsAlone} or below (callers leave, of either
 *       kind), the caller leaving hands a free slot to the oldest caller queued in each sibling
 *       that has one, at once: it does not wait for a call of its own kind to end.</li>
 *   <li><b>When the calls in flight answer late</b> (a batch waiting for a row lock, a server
 *       that stalls), the oldest queued caller that has waited {@code escapeNanos} takes one
 *       more slot, up to {@code callsAlone}, and leads a batch of everything queued. The slot
 *       counts as a slot of the coalescer (callers arriving take it, a call that ends hands it
 *       on) until a call that was in flight before the escape ends (until then it may be
 *       stuck), and goes with every other once no call is in flight. When {@code callsAlone}
 *       calls are in flight and none has ended for {@code escapeNanos}, all may be stuck: the
 *       oldest queued caller then makes one call beyond {@code callsAlone}, kept by nobody (it
 *       ends as a call above the limit does), as it would have made its own call without
 *       coalescing. So a queued caller waits for calls that answer late about
 *       {@code escapeNanos}, or twice that while every call in flight is stuck, then calls (the
 *       store may make it wait too: a pool with no connection free). The callers inside a stuck
 *       call still wait for it (unless the store gives up, as a coalesced batch may). A ticker
 *       that throws, or stands still, disables the escape, not the call.</li>
 * </ul>
 *
 * @param <Q> a request
 * @param <R> its answer
 */
final class Coalescer<Q, R> {

  private final int maxBatch;
  private final int callsAlone;
  private final int batchCalls;
  private final Function<Q, R> single;
  private final Function<List<Q>, List<R>> batch;
  private final ReentrantLock lock = new ReentrantLock();
  private final ArrayDeque<Pending<Q, R>> queue = new ArrayDeque<>();
  /** Calls in flight, counting slots handed to a woken leader. Guarded by {@link #lock}. */
  private int calling;
  /**
   * Slots added by escapes (at most {@code callsAlone - batchCalls}): how many calls in flight
   * may be stuck. One goes when a call that was in flight before the latest escape ends (it may
   * have been one of those escaped from), all when no call is in flight. Guarded by
   * {@link #lock}.
   */
  private int escaped;
  /** How many escapes there have been: a call begun before the latest may be a stuck one. */
  private volatile long escapes;
  /**
   * When a call last ended with callers queued, on the ticker ({@link #NO_TIME}: none yet): no
   * call has ended for {@link #escapeNanos} while callers queue, so every call in flight may be
   * stuck. Guarded by {@link #lock}.
   */
  private long lastEnded = NO_TIME;
  /** The most calls in flight beyond {@code callsAlone} there have been, by escapes (for tests). */
  private int mostBeyond;
  /** Callers in this coalescer and its siblings now, and the siblings. */
  private final Demand demand;
  private final LongSupplier ticker;
  /** How long the oldest queued caller waits before it takes one more slot; 0: never. */
  private final long escapeNanos;
  private final Detours detours;

  /**
   * The callers in a group of sibling coalescers (a call's claim and its completion count as one
   * caller each while they wait or call), and how many of them are queued.
   */
  static final class Demand {
    private final AtomicInteger callers = new AtomicInteger();
    /** Requests queued in any sibling: a caller leaving looks at the queues only when some are. */
    private final AtomicInteger queued = new AtomicInteger();
    private final List<Coalescer<?, ?>> siblings = new CopyOnWriteArrayList<>();

    /** How many callers are in the siblings now (for tests). */
    int callers() {
      return callers.get();
    }

    /** Counts {@code n} callers more (less) as if in a sibling, admitting nobody (for tests). */
    void addCallersForTest(int n) {
      callers.addAndGet(n);
    }
  }

  /**
   * @param callsAlone how many single calls may be in flight while nobody queues
   * @param batchCalls how many calls may be in flight once callers queue (at most callsAlone)
   * @param demand     counts the callers in this coalescer and in its siblings (shared with them)
   * @param ticker      nanoseconds, as {@link System#nanoTime}
   * @param escapeNanos how long the oldest queued caller waits for the calls in flight before it
   *     takes one more slot (at most {@code callsAlone} in flight); 0: it waits for them
   * @param single one request alone (a caller alone, and the fallback of a failed batch)
   * @param batch  many at once: one answer per request, in order
   */
  Coalescer(int maxBatch, int callsAlone, int batchCalls, Demand demand, LongSupplier ticker,
      long escapeNanos, Function<Q, R> single, Function<List<Q>, List<R>> batch) {
    this(maxBatch, callsAlone, batchCalls, demand, ticker, escapeNanos, single, batch,
        (detour, calls) -> {});
  }

  /**
   * What a coalescer tells of the ways it goes around a call that answered late or failed: an
   * escape, or a failed batch whose requests are each made alone. Told outside the lock, on the
   * caller's thread; what it throws is dropped.
   */
  interface Detours {
    void detour(OnceListener.CoalescingDetour detour, int calls);
  }

  /** As above, telling {@code detours} of each escape and each failed batch. */
  Coalescer(int maxBatch, int callsAlone, int batchCalls, Demand demand, LongSupplier ticker,
      long escapeNanos, Function<Q, R> single, Function<List<Q>, List<R>> batch,
      Detours detours) {
    if (batchCalls < 1 || batchCalls > callsAlone) {
      throw new IllegalArgumentException("batchCalls must be between 1 and " + callsAlone);
    }
    this.maxBatch = maxBatch;
    this.callsAlone = callsAlone;
    this.batchCalls = batchCalls;
    this.demand = demand;
    this.ticker = ticker;
    this.escapeNanos = escapeNanos;
    this.single = single;
    this.batch = batch;
    this.detours = detours;
    demand.siblings.add(this);
  }

  /** The answer to {@code request}: from a call of its own, or one it shares with others. */
  R call(Q request) {
    demand.callers.incrementAndGet();
    try {
      return callCounted(request);
    } finally {
      // Read after the decrement, as a caller queueing reads the demand after counting itself
      // queued: one of the two sees the other, so no caller stays queued with a slot free.
      if (demand.callers.decrementAndGet() <= callsAlone && demand.queued.get() > 0) {
        for (Coalescer<?, ?> sibling : demand.siblings) {
          sibling.admit();
        }
      }
    }
  }

  /** How many calls may be in flight at the current demand. */
  private int slots() {
    return demand.callers.get() <= callsAlone ? callsAlone : batchCalls;
  }

  /** {@link #slots}, with the slots escapes added. Call with the lock held. */
  private int limit() {
    return Math.min(callsAlone, slots() + escaped);
  }

  /**
   * The ticker, or {@link #NO_TIME} if it threw anything, an Error too: a user's ticker must not
   * break a call, and it is read with the lock held, which a throw would leave held for good.
   */
  private long tick() {
    try {
      return ticker.getAsLong();
    } catch (Throwable e) {
      return NO_TIME;
    }
  }

  /** No time read: the caller does not escape. */
  private static final long NO_TIME = Long.MIN_VALUE;

  /**
   * The demand fell: a free slot goes to the oldest queued caller, which takes everything queued
   * when it wakes (the next caller leaving admits another if a slot is still free).
   */
  private void admit() {
    Pending<Q, R> leader = null;
    lock.lock();
    try {
      if (!queue.isEmpty() && calling < limit()) {
        calling++;
        leader = dequeue();
        leader.state = Pending.LEAD;
      }
    } finally {
      lock.unlock();
    }
    if (leader != null) {
      LockSupport.unpark(leader.waiter);
    }
  }

  /**
   * {@code mine} has waited {@link #escapeNanos} at the head of the queue while the calls in
   * flight did not end: one more call, leading everything queued, if fewer than
   * {@link #callsAlone} are in flight, or if more are and none has ended for
   * {@link #escapeNanos} (every one may be stuck: a caller alone waiting at the server for a row
   * a long transaction holds keeps its slot; without this, {@code callsAlone} such calls held up
   * every queued caller, on any key, until they ended, where without coalescing the pool's other
   * connections would have served them). Null otherwise (it waits on).
   */
  private List<Pending<Q, R>> escape(Pending<Q, R> mine) {
    if (mine.state != Pending.WAITING || mine.queuedAt == NO_TIME) {
      return null;
    }
    long now = tick();
    if (now == NO_TIME || now - mine.queuedAt < escapeNanos) {
      return null;
    }
    lock.lock();
    try {
      if (mine.state != Pending.WAITING || queue.peek() != mine
          || calling >= callsAlone && lastEnded != NO_TIME && now - lastEnded < escapeNanos) {
        return null;
      }
      dequeue();
      calling++;
      mostBeyond = Math.max(mostBeyond, calling - callsAlone);
      escaped = Math.min(escaped + 1, callsAlone - batchCalls);
      escapes++; // under the lock: only read outside it
      return take(mine);
    } finally {
      lock.unlock();
    }
  }

  /** Queues {@code p}, counted in the demand's queued. Call with the lock held. */
  private void enqueue(Pending<Q, R> p) {
    queue.add(p);
    demand.queued.incrementAndGet();
  }

  /** The oldest queued request, out of the queue; null if none. Call with the lock held. */
  private Pending<Q, R> dequeue() {
    Pending<Q, R> p = queue.poll();
    if (p != null) {
      demand.queued.decrementAndGet();
    }
    return p;
  }

  private R callCounted(Q request) {
    lock.lock();
    if (queue.isEmpty() && calling < limit()) {
      // A free slot and nobody waiting: call alone, with nothing to allocate or hand over.
      calling++;
      long began = escapes;
      lock.unlock();
      try {
        return single.apply(request);
      } finally {
        handOver(began);
      }
    }
    Pending<Q, R> mine = new Pending<>(request, Thread.currentThread(),
        escapeNanos > 0 ? tick() : NO_TIME);
    enqueue(mine);
    List<Pending<Q, R>> taken = null;
    if (calling < limit()) {
      calling++;
      taken = take(null);
    }
    lock.unlock();
    // A leader runs other callers' requests: its own interrupt must not fail theirs (a pool's
    // wait for a connection gives up when interrupted). Kept, and set again at the end.
    boolean interrupted = taken != null && taken.size() > 1 && Thread.interrupted();
    while (true) {
      if (taken != null) {
        long began = escapes;
        try {
          run(taken);
        } finally {
          handOver(began);
        }
        taken = null;
      }
      while (mine.state == Pending.WAITING && taken == null) {
        if (escapeNanos > 0) {
          LockSupport.parkNanos(this, escapeNanos);
          taken = escape(mine);
        } else {
          LockSupport.park(this);
        }
        interrupted |= Thread.interrupted(); // uninterruptible, as a store call is
      }
      if (taken != null) {
        tell(OnceListener.CoalescingDetour.ESCAPE, taken.size());
        continue; // escaped: it leads a batch with a slot of its own
      }
      if (mine.state == Pending.ALONE) {
        // The batch this request was in failed: repeated here, on its caller's own thread, so
        // that in an outage every caller learns of it after one more call, not after the
        // calls of everyone ahead of it in the batch.
        if (interrupted) {
          Thread.currentThread().interrupt();
        }
        return single.apply(request);
      }
      if (mine.state == Pending.DONE) {
        break;
      }
      // LEAD: a call that ended took this request out of the queue and handed its caller its
      // slot. The batch is taken now, not then: what queued while this caller woke joins it.
      mine.state = Pending.WAITING; // no one else writes it: it is out of the queue
      lock.lock();
      try {
        taken = take(mine);
      } finally {
        lock.unlock();
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
    return mine.answer();
  }

  /**
   * {@code first} (if not null), then the oldest waiting requests, up to {@link #maxBatch}. Call
   * with the lock held.
   */
  private List<Pending<Q, R>> take(Pending<Q, R> first) {
    List<Pending<Q, R>> taken = new ArrayList<>(Math.min(queue.size() + 1, maxBatch));
    if (first != null) {
      taken.add(first);
    }
    while (!queue.isEmpty() && taken.size() < maxBatch) {
      taken.add(dequeue());
    }
    return taken;
  }

  /**
   * Ends a call begun when there had been {@code began} escapes: gives its slot to the oldest
   * waiting request, to lead the next batch, or gives the slot up (nobody waits, or more calls
   * are in flight than the demand allows, with the slots escapes added: fewer, larger batches,
   * and a call still in flight serves the queue). A call begun before the latest escape may be
   * one that was escaped from: now that it ended, one escape's slot goes.
   */
  private void handOver(long began) {
    Pending<Q, R> leader = null;
    lock.lock();
    try {
      if (began < escapes && escaped > 0) {
        escaped--;
      }
      if (!queue.isEmpty() && escapeNanos > 0) {
        lastEnded = tick();
      }
      if (queue.isEmpty() || calling > limit()) {
        calling--;
        if (calling == 0) {
          escaped = 0; // nothing in flight, so nothing stuck
        }
      } else {
        leader = dequeue(); // out of the queue: nobody else can take it into a batch
        leader.state = Pending.LEAD;
      }
    } finally {
      lock.unlock();
    }
    if (leader != null) {
      LockSupport.unpark(leader.waiter);
    }
  }

  /**
   * The most calls in flight beyond {@code callsAlone} at once there have been, each begun by an
   * escape when every call in flight may have been stuck (for tests).
   */
  int mostCallsBeyondCallsAlone() {
    return underLockForTests(() -> mostBeyond);
  }

  /** How many slots escapes added that are still kept (for tests). */
  int escapedSlots() {
    return underLockForTests(() -> escaped);
  }

  /** How many calls are in flight, counting slots handed to a woken leader (for tests). */
  int callsInFlight() {
    return underLockForTests(() -> calling);
  }

  /** How many requests wait for a call (for tests). */
  int queued() {
    return underLockForTests(queue::size);
  }

  /** Reads under the lock; fails, rather than hang a test, if the lock is never free. */
  private int underLockForTests(java.util.function.IntSupplier read) {
    try {
      if (!lock.tryLock(30, java.util.concurrent.TimeUnit.SECONDS)) {
        throw new IllegalStateException("the coalescer's lock was not free for 30 s");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
    try {
      return read.getAsInt();
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
      } catch (Error e) {
        // Every caller must learn of it, or it would wait for an answer forever.
        for (Pending<Q, R> p : taken) {
          p.finish(null, e);
        }
        return;
      } catch (Throwable e) {
        // Fall through: each request alone (below), so each caller gets its own answer. A
        // checked exception (a store in another JVM language) is a failed batch too.
      }
      if (answers != null && answers.size() == taken.size()) {
        for (int i = 0; i < taken.size(); i++) {
          taken.get(i).finish(answers.get(i), null);
        }
        return;
      }
      // Each caller repeats its own request on its own thread, at once; the leader its own here.
      Pending<Q, R> own = null;
      for (Pending<Q, R> p : taken) {
        if (p.waiter == Thread.currentThread()) {
          own = p;
        } else {
          p.repeatAlone();
        }
      }
      tell(OnceListener.CoalescingDetour.BATCH_FAILED, taken.size());
      if (own != null) {
        runAlone(own);
      }
      return;
    }
    for (Pending<Q, R> p : taken) {
      runAlone(p);
    }
  }

  /**
   * Tells a detour, dropping whatever the listener throws, an Error too: it is told while
   * callers depend on this thread (the batch an escaping caller leads, the leader's own repeat),
   * and a caller left without its answer would wait for good.
   */
  private void tell(OnceListener.CoalescingDetour detour, int calls) {
    try {
      detours.detour(detour, calls);
    } catch (Throwable ignored) {
      // Dropped, as above (Execution has logged all but a VirtualMachineError).
    }
  }

  private void runAlone(Pending<Q, R> p) {
    R answer;
    try {
      answer = single.apply(p.request);
    } catch (Throwable e) {
      p.finish(null, e);
      return;
    }
    p.finish(answer, null);
  }

  /** Throws {@code e} as it is, checked or not (a store's checked exception reaches its caller). */
  @SuppressWarnings("unchecked")
  private static <E extends Throwable> E sneaky(Throwable e) throws E {
    throw (E) e;
  }

  /** One caller's request and, once done, its answer or failure. */
  private static final class Pending<Q, R> {
    static final int WAITING = 0;
    /** Its caller leads the next batch, with the slot of a call that ended. */
    static final int LEAD = 1;
    static final int DONE = 2;
    /** The batch it was in failed: its caller repeats it alone. */
    static final int ALONE = 3;

    final Q request;
    final Thread waiter;
    /** When it was queued, on the ticker ({@code NO_TIME}: it does not escape). */
    final long queuedAt;
    R answer;
    Throwable failure;
    volatile int state;

    Pending(Q request, Thread waiter, long queuedAt) {
      this.request = request;
      this.waiter = waiter;
      this.queuedAt = queuedAt;
    }

    /** Answers this request and wakes its caller (unless the caller is the one answering). */
    void finish(R value, Throwable e) {
      answer = value;
      failure = e;
      state = DONE; // volatile: publishes the answer
      if (waiter != Thread.currentThread()) {
        LockSupport.unpark(waiter);
      }
    }

    /** Hands the request back to its caller, to repeat alone; wakes it. */
    void repeatAlone() {
      state = ALONE;
      LockSupport.unpark(waiter);
    }

    R answer() {
      if (failure != null) {
        throw Coalescer.<RuntimeException>sneaky(failure);
      }
      return answer;
    }
  }
}
