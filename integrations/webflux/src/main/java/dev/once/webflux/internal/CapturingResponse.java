package dev.once.webflux.internal;

import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.List;
import org.reactivestreams.Publisher;
import org.reactivestreams.Subscription;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.core.io.buffer.DataBufferUtils;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.ResponseCookie;
import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.http.server.reactive.ServerHttpResponseDecorator;
import org.springframework.util.CollectionUtils;
import org.springframework.util.LinkedMultiValueMap;
import org.springframework.util.MultiValueMap;
import reactor.core.publisher.BaseSubscriber;
import reactor.core.publisher.Flux;
import reactor.core.publisher.FluxSink;
import reactor.core.publisher.Mono;
import reactor.core.publisher.MonoSink;

/**
 * The response as the application writes it, held back from the client until the filter has
 * stored the outcome ({@link #sendHeld()}): no byte leaves before the record is complete, so a
 * client that hangs up mid-answer and retries gets the replay, and a retry sent the moment the
 * answer arrives never finds the key in progress.
 *
 * <p>Status, headers and cookies are kept here, apart from the real response, until they are
 * sent: an application that fails after setting some leaves nothing behind on the error answer.
 * The body is held up to {@code limit} bytes, the most the filter stores. A larger body
 * overflows: status, headers and what was held go to the client, then the rest streams through
 * as the application writes it, with the client's back-pressure (it will not be stored anyway).
 * A failed write to the client from then on is remembered ({@link #clientGone()}) and never
 * reaches the application: the client leaving must not look like a failure of the work.
 *
 * <p>{@code writeAndFlushWith} is {@code writeWith} of the flattened body (nothing is flushed
 * while held); {@code setComplete} ends the answer, whatever was written.
 */
public final class CapturingResponse extends ServerHttpResponseDecorator {

  private final ServerHttpResponse client;
  private final int limit;
  private final HttpHeaders headers;
  private final MultiValueMap<String, ResponseCookie> cookies = new LinkedMultiValueMap<>();
  private final ByteArrayOutputStream held = new ByteArrayOutputStream();
  private HttpStatusCode status;
  private volatile boolean overflowed;
  private volatile boolean clientGone;
  private volatile boolean sent;
  /**
   * Whether the application's answer is committed, as the server's response would be: a body
   * write delivered its first buffer or completed, or {@code setComplete} was called. From then
   * on status, headers and cookies are fixed, and another body write is refused.
   */
  private volatile boolean committed;
  /** Whether a body write failed after delivering part of the body: what is held is cut short. */
  private volatile boolean cutShort;

  public CapturingResponse(ServerHttpResponse client, int limit) {
    super(client);
    this.client = client;
    this.limit = limit;
    // What earlier filters set (CORS, security headers) stays, as it would without this filter.
    this.headers = new HttpHeaders();
    client.getHeaders().forEach((name, values) -> headers.put(name, new ArrayList<>(values)));
  }

  @Override
  public HttpHeaders getHeaders() {
    // Read-only once committed, as the server's: a header set after that never reached the
    // client without this filter, so it is neither sent nor stored.
    return committed || sent ? HttpHeaders.readOnlyHttpHeaders(headers) : headers;
  }

  @Override
  public boolean setStatusCode(HttpStatusCode status) {
    if (committed || sent) {
      return false;
    }
    this.status = status;
    return true;
  }

  /**
   * Every way a status can be set goes through here: {@code ServerHttpResponse}'s default would
   * reach the decorated response and bypass the capture.
   */
  @Override
  public boolean setRawStatusCode(Integer value) {
    return setStatusCode(value == null ? null : HttpStatusCode.valueOf(value));
  }

  @Override
  public HttpStatusCode getStatusCode() {
    return status;
  }

  @Override
  public MultiValueMap<String, ResponseCookie> getCookies() {
    return committed || sent ? CollectionUtils.unmodifiableMultiValueMap(cookies) : cookies;
  }

  @Override
  public void addCookie(ResponseCookie cookie) {
    if (committed || sent) {
      throw new IllegalStateException("Can't add the cookie " + cookie
          + " because the HTTP response has already been committed");
    }
    cookies.add(cookie.getName(), cookie);
  }

  @Override
  public boolean isCommitted() {
    return committed || sent;
  }

  /**
   * Holds the body. A second write once the answer is committed is refused with an error and
   * writes nothing, as the server refuses it: the client gets the first body only.
   */
  @Override
  public Mono<Void> writeWith(Publisher<? extends DataBuffer> body) {
    return Mono.defer(() -> {
      if (committed || sent) {
        return Flux.from(body).doOnNext(DataBufferUtils::release)
            .then(Mono.error(new IllegalStateException(
                "the response body was already written; a second body is not sent")));
      }
      return Mono.create(done -> Flux.from(body).subscribe(new Holder(done)));
    });
  }

  @Override
  public Mono<Void> writeAndFlushWith(Publisher<? extends Publisher<? extends DataBuffer>> body) {
    return writeWith(Flux.from(body).concatMap(Flux::from));
  }

  @Override
  public Mono<Void> setComplete() {
    return Mono.fromRunnable(() -> committed = true);
  }

  /**
   * Whether the application answered: a body write delivered a buffer or completed, or it called
   * {@code setComplete}. An error after that is an error after the work, never a reason to run
   * it again.
   */
  public boolean answered() {
    return committed || overflowed;
  }

  /** Whether what the application answered is whole: no body write failed part-way. */
  public boolean complete() {
    return answered() && !cutShort;
  }

  /** The status the application set, 200 if none. */
  public int status() {
    return status == null ? 200 : status.value();
  }

  /** Whether the body outgrew the bound, so it streamed to the client and no copy is kept. */
  public boolean overflowed() {
    return overflowed;
  }

  /** Whether a write to the client failed (it hung up) while the body streamed past the bound. */
  public boolean clientGone() {
    return clientGone;
  }

  /** The body held back; empty after an overflow. */
  public synchronized byte[] body() {
    return overflowed ? new byte[0] : held.toByteArray();
  }

  /**
   * Sends status, headers, cookies and the held body to the client: call once the outcome is
   * stored, or once the filter decided not to store it. After an overflow, only completes (the
   * answer already streamed). Fails if the client is gone; the caller logs it, it changes nothing
   * stored.
   */
  public Mono<Void> sendHeld() {
    if (overflowed) {
      return Mono.empty();
    }
    byte[] body = body();
    commitHead();
    client.getHeaders().setContentLength(body.length);
    if (body.length == 0) {
      return client.setComplete();
    }
    return client.writeWith(Mono.fromSupplier(() -> client.bufferFactory().wrap(body)));
  }

  /** Status, headers and cookies onto the real response, once. */
  private synchronized void commitHead() {
    if (sent) {
      return;
    }
    sent = true;
    if (status != null) {
      client.setStatusCode(status);
    }
    HttpHeaders out = client.getHeaders();
    out.clear();
    headers.forEach((name, values) -> out.put(name, values));
    cookies.forEach((name, list) -> list.forEach(client::addCookie));
  }

  /**
   * Holds what one {@code writeWith} publishes, one buffer at a time, up to the bound; past it,
   * hands the rest to the client's writer, which then drives the demand.
   */
  private final class Holder extends BaseSubscriber<DataBuffer> {
    private final MonoSink<Void> done;
    private volatile FluxSink<DataBuffer> out;
    /** The application's own failure while streaming past the bound. */
    private volatile Throwable failure;
    /** Whether this write delivered a buffer. */
    private volatile boolean received;

    Holder(MonoSink<Void> done) {
      this.done = done;
      done.onCancel(this::cancel);
    }

    @Override
    protected void hookOnSubscribe(Subscription subscription) {
      subscription.request(1);
    }

    @Override
    protected void hookOnNext(DataBuffer buffer) {
      received = true;
      committed = true;
      FluxSink<DataBuffer> sink = out;
      if (sink != null) {
        sink.next(buffer);
        return;
      }
      byte[] prefix;
      synchronized (CapturingResponse.this) {
        if (!overflowed && held.size() + (long) buffer.readableByteCount() <= limit) {
          byte[] bytes = new byte[buffer.readableByteCount()];
          buffer.read(bytes);
          DataBufferUtils.release(buffer);
          held.write(bytes, 0, bytes.length);
          prefix = null;
        } else {
          overflowed = true;
          prefix = held.toByteArray();
          held.reset();
        }
      }
      if (prefix == null) {
        request(1);
        return;
      }
      stream(prefix, buffer);
    }

    /** Past the bound: the head, what was held and this buffer go out, then the rest as written. */
    private void stream(byte[] prefix, DataBuffer first) {
      commitHead();
      // Sent chunked, whatever length the application declared: the last chunk goes out only
      // when the filter's answer completes, after the outcome is stored, so a client that has
      // the whole answer never retries into a key still in progress. (The declared length may
      // not hold either.)
      client.getHeaders().remove(HttpHeaders.CONTENT_LENGTH);
      List<DataBuffer> start = new ArrayList<>(2);
      if (prefix.length > 0) {
        start.add(client.bufferFactory().wrap(prefix));
      }
      start.add(first);
      Flux<DataBuffer> rest = Flux.create(sink -> {
        start.forEach(sink::next);
        out = sink;
        sink.onRequest(this::request);
        // The connection closed under the writer, which cancels rather than fails: the client
        // left, and the application's answer stands all the same.
        sink.onCancel(() -> {
          cancel();
          clientGone = true;
          done.success();
        });
      });
      client.writeWith(rest).subscribe(null, error -> {
        if (failure != null) {
          done.error(failure); // the application failed: its failure, as it threw it
          return;
        }
        clientGone = true; // the client left: the application's answer stands
        cancel();
        done.success();
      }, done::success);
    }

    @Override
    protected void hookOnComplete() {
      committed = true;
      FluxSink<DataBuffer> sink = out;
      if (sink != null) {
        sink.complete();
      } else {
        done.success();
      }
    }

    @Override
    protected void hookOnError(Throwable error) {
      if (received) {
        cutShort = true;
      }
      FluxSink<DataBuffer> sink = out;
      if (sink != null) {
        failure = error;
        sink.error(error);
      } else {
        done.error(error);
      }
    }
  }
}
