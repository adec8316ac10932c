package dev.once.http;

import dev.once.Codec;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Stores a {@link StoredResponse} as bytes: a format byte, the status, the header count, each
 * header name and value (length-prefixed UTF-8), then the body. Binary, so a body of any media
 * type round-trips byte for byte. Format 1 holds the whole response; format 2, the same layout
 * with an empty body, marks a response whose body was too large to store. The one outcome format
 * of Once's HTTP adapters: records written by one are replayed by any other.
 */
public final class StoredResponseCodec implements Codec<StoredResponse> {

  /** The media type recorded next to the stored bytes. */
  public static final String MEDIA_TYPE = "application/vnd.once.http-response;v=1";

  private static final int WHOLE = 1;
  private static final int BODY_NOT_STORED = 2;
  private static final int MAX_HEADERS = 1000;

  /** The codec (stateless). */
  public static final StoredResponseCodec INSTANCE = new StoredResponseCodec();

  private StoredResponseCodec() {}

  @Override
  public String mediaType() {
    return MEDIA_TYPE;
  }

  @Override
  public byte[] encode(StoredResponse response) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(response.body().length + 256);
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      out.writeByte(response.bodyStored() ? WHOLE : BODY_NOT_STORED);
      out.writeShort(response.status());
      out.writeInt(response.headers().size());
      for (StoredResponse.Header header : response.headers()) {
        writeText(out, header.name());
        writeText(out, header.value());
      }
      out.writeInt(response.body().length);
      out.write(response.body());
    } catch (IOException e) {
      throw new UncheckedIOException("cannot happen: writing to memory", e);
    }
    return bytes.toByteArray();
  }

  @Override
  public StoredResponse decode(byte[] stored) {
    try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(stored))) {
      int format = in.readUnsignedByte();
      if (format != WHOLE && format != BODY_NOT_STORED) {
        throw new IllegalArgumentException("stored HTTP response has unknown format " + format);
      }
      int status = in.readUnsignedShort();
      int count = in.readInt();
      if (count < 0 || count > MAX_HEADERS) {
        throw new IllegalArgumentException("stored HTTP response has " + count + " headers");
      }
      List<StoredResponse.Header> headers = new ArrayList<>(count);
      for (int i = 0; i < count; i++) {
        headers.add(new StoredResponse.Header(readText(in), readText(in)));
      }
      byte[] body = readBytes(in);
      if (in.available() != 0) {
        throw new IllegalArgumentException("stored HTTP response has trailing bytes");
      }
      return new StoredResponse(status, headers, body, format == WHOLE);
    } catch (IOException e) {
      throw new IllegalArgumentException("stored HTTP response is truncated", e);
    }
  }

  /** The size {@link #encode} gives {@code response}, without encoding it. */
  public static long encodedSize(StoredResponse response) {
    long size = 1 + 2 + 4 + 4 + response.body().length;
    for (StoredResponse.Header header : response.headers()) {
      size += 8 + utf8Length(header.name()) + utf8Length(header.value());
    }
    return size;
  }

  private static long utf8Length(String text) {
    return text.getBytes(StandardCharsets.UTF_8).length;
  }

  private static void writeText(DataOutputStream out, String text) throws IOException {
    byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
    out.writeInt(bytes.length);
    out.write(bytes);
  }

  private static String readText(DataInputStream in) throws IOException {
    return new String(readBytes(in), StandardCharsets.UTF_8);
  }

  private static byte[] readBytes(DataInputStream in) throws IOException {
    int length = in.readInt();
    if (length < 0 || length > in.available()) {
      throw new IllegalArgumentException("stored HTTP response has a bad length " + length);
    }
    return in.readNBytes(length);
  }
}
