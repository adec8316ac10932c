package dev.once.nats.internal;

import dev.once.batch.DeadLetter;
import dev.once.batch.DeadLetterPublisher;
import dev.once.nats.DeadLetterHeaders;
import io.nats.client.JetStream;
import io.nats.client.Message;
import io.nats.client.PublishOptions;
import io.nats.client.api.PublishAck;
import io.nats.client.impl.Headers;
import io.nats.client.impl.NatsJetStreamMetaData;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * Publishes dead letters with a JetStream publish, which returns only once a stream has stored
 * the letter (its {@link PublishAck}): the original payload, its headers but JetStream's own, and
 * the {@link DeadLetterHeaders}. Not API.
 */
public final class JetStreamDeadLetters implements DeadLetterPublisher<Message> {

  /** Headers JetStream acts on (message id, expectations, rollups, TTL): never copied. */
  private static final String RESERVED_PREFIX = "Nats-";
  private static final int MAX_MESSAGE_CHARS = 1000;

  private final Supplier<JetStream> jetStream;
  private final Function<Message, String> subjects;
  private final String consumer;

  public JetStreamDeadLetters(Supplier<JetStream> jetStream, Function<Message, String> subjects,
      String consumer) {
    this.jetStream = jetStream;
    this.subjects = subjects;
    this.consumer = consumer;
  }

  @Override
  public void publish(DeadLetter<Message> letter) throws Exception {
    Message message = letter.message();
    String subject = subjects.apply(message);
    if (subject == null || subject.isEmpty()) {
      throw new IllegalStateException("the dead-letter subject function returned no subject for "
          + message.getSubject());
    }
    Headers headers = headers(letter);
    NatsJetStreamMetaData meta = message.isJetStream() ? message.metaData() : null;
    PublishAck ack;
    if (meta == null) {
      ack = jetStream.get().publish(subject, headers, message.getData());
    } else {
      // The letter's own message id makes a second publish of the same letter (a crash between
      // the publish and the stored failure) a duplicate the dead-letter stream drops within its
      // duplicate window. The original's stored time tells apart a stream re-created under the
      // same name, whose sequences start again.
      String id = "once-dlq:" + meta.getStream() + ":" + consumer + ":" + meta.streamSequence()
          + ":" + meta.timestamp().toInstant();
      ack = jetStream.get().publish(subject, headers, message.getData(),
          PublishOptions.builder().messageId(id).build());
      if (ack.getStream().equals(meta.getStream())) {
        // The letter went back into the stream it came from: it would be consumed again, and
        // perhaps dead-lettered again, without end. Refused loudly; the message is retried.
        throw new IllegalStateException("the dead-letter subject " + subject + " is captured by"
            + " the consumed stream " + meta.getStream() + ": choose a dead-letter subject that"
            + " another stream captures (deadLetterSubject)");
      }
    }
  }

  /** The original headers without JetStream's own, and the dead-letter headers. */
  static Headers headers(DeadLetter<Message> letter) {
    Message message = letter.message();
    Headers headers = new Headers();
    Headers original = message.getHeaders();
    String originalId = null;
    if (original != null) {
      for (Map.Entry<String, List<String>> header : original.entrySet()) {
        if (header.getKey().regionMatches(true, 0, RESERVED_PREFIX, 0, RESERVED_PREFIX.length())) {
          if (header.getKey().equals("Nats-Msg-Id") && !header.getValue().isEmpty()) {
            originalId = header.getValue().get(header.getValue().size() - 1);
          }
          continue;
        }
        try {
          headers.add(header.getKey(), header.getValue());
        } catch (IllegalArgumentException e) {
          // A header received that a publish would refuse: left out rather than letting it
          // block the dead letter (and so the message) for ever.
        }
      }
    }
    headers.put(DeadLetterHeaders.ORIGINAL_SUBJECT, message.getSubject());
    if (message.isJetStream()) {
      NatsJetStreamMetaData meta = message.metaData();
      headers.put(DeadLetterHeaders.ORIGINAL_STREAM, meta.getStream());
      headers.put(DeadLetterHeaders.ORIGINAL_CONSUMER, meta.getConsumer());
      headers.put(DeadLetterHeaders.STREAM_SEQUENCE, Long.toString(meta.streamSequence()));
    }
    if (originalId != null) {
      headers.put(DeadLetterHeaders.ORIGINAL_MSG_ID, encode(originalId));
    }
    if (letter.key() != null) {
      headers.put(DeadLetterHeaders.IDEMPOTENCY_KEY, letter.key().key());
    }
    headers.put(DeadLetterHeaders.REASON, letter.reason().name());
    headers.put(DeadLetterHeaders.EXCEPTION_CLASS, encode(letter.exceptionClass()));
    String text = letter.exceptionMessage();
    if (text.length() > MAX_MESSAGE_CHARS) {
      text = text.substring(0, MAX_MESSAGE_CHARS);
    }
    headers.put(DeadLetterHeaders.EXCEPTION_MESSAGE, encode(text));
    headers.put(DeadLetterHeaders.ATTEMPTS, Integer.toString(letter.attempts()));
    return headers;
  }

  /**
   * A header value NATS accepts: printable ASCII and tab kept (but {@code %}), everything else as
   * {@code %XX} of its UTF-8 bytes, so the value can be decoded exactly.
   */
  static String encode(String value) {
    StringBuilder out = new StringBuilder(value.length());
    for (byte b : value.getBytes(StandardCharsets.UTF_8)) {
      int c = b & 0xff;
      if ((c >= 0x20 && c < 0x7f && c != '%') || c == '\t') {
        out.append((char) c);
      } else {
        out.append('%').append(Character.toUpperCase(Character.forDigit(c >> 4, 16)))
            .append(Character.toUpperCase(Character.forDigit(c & 0xf, 16)));
      }
    }
    return out.toString();
  }
}
