package dev.once.internal;

import dev.once.IdempotencyKey;
import dev.once.batch.BatchOutcome;
import dev.once.batch.ItemResult;
import dev.once.spi.Outcome;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** What one batch came to, gathered while a {@link BatchEngine} processes it. Not API. */
final class BatchRun<M> {

  /** A handled message whose outcome is stored with the rest of the batch. */
  record Pending(AttemptImpl attempt, Outcome outcome, long started, CallEvents events) {
    IdempotencyKey key() {
      return attempt.idempotencyKey();
    }

    long token() {
      return attempt.token();
    }
  }

  final List<M> messages;
  final Disposition[] dispositions;
  final IdempotencyKey[] keys;
  /** Each message's call, as the listener hears of it; null for a message without a key. */
  final CallEvents[] calls;
  /** Handled messages whose outcome awaits the batch's completeAll, in handling order. */
  final Map<IdempotencyKey, Pending> pending = new LinkedHashMap<>();
  /** Every claim acquired in this batch (each held until stored, released or kept). */
  final List<AttemptImpl> attempts = new ArrayList<>();
  /** Why the batch's completeAll failed, if it did. */
  RuntimeException storeFailure;

  BatchRun(List<M> messages) {
    this.messages = List.copyOf(messages);
    this.dispositions = new Disposition[messages.size()];
    this.keys = new IdempotencyKey[messages.size()];
    this.calls = new CallEvents[messages.size()];
  }

  /**
   * Ends every call the batch did not end (a message not run or never reached, or whose outcome
   * is kept unstored), as its result says.
   */
  void endCalls() {
    for (int i = 0; i < calls.length; i++) {
      CallEvents call = calls[i];
      if (call == null || call.ended()) {
        continue;
      }
      Disposition d = dispositions[i];
      if (d == null) {
        // Never reached (the batch ended early): the one in hand ended in the error already.
        call.end(dev.once.OnceListener.CallOutcome.NOT_RUN, null);
      } else if (d.status() == dev.once.batch.ItemResult.Status.OUTCOME_PENDING) {
        call.end(dev.once.OnceListener.CallOutcome.OUTCOME_UNKNOWN, d.failure());
      } else if (d.status() == dev.once.batch.ItemResult.Status.LEASE_LOST) {
        call.end(dev.once.OnceListener.CallOutcome.LEASE_LOST, d.failure());
      } else {
        call.end(dev.once.OnceListener.CallOutcome.NOT_RUN, d.failure());
      }
    }
  }

  void set(int i, IdempotencyKey key, Disposition disposition) {
    dispositions[i] = disposition;
    keys[i] = key;
  }

  BatchOutcome<M> outcome() {
    List<ItemResult<M>> items = new ArrayList<>(dispositions.length);
    for (int i = 0; i < dispositions.length; i++) {
      Disposition d = dispositions[i];
      if (d == null || d.awaiting() != null) {
        // Never reached: the batch ended early (a failed claim fills every one; this guards).
        throw new IllegalStateException("message " + i + " of the batch has no result: "
            + Arrays.toString(dispositions));
      }
      items.add(new ItemResult<>(i, messages.get(i), keys[i], d.status(), d.retryAt(),
          d.failure(), d.attempt(), d.reason()));
    }
    return new BatchOutcome<>(items);
  }
}
