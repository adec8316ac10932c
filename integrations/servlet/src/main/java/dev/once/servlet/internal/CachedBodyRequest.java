package dev.once.servlet.internal;

import jakarta.servlet.ReadListener;
import jakarta.servlet.ServletInputStream;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletRequestWrapper;
import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URLDecoder;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Enumeration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The request with its body already read (to fingerprint it), served again to the application
 * through {@link #getInputStream()} or {@link #getReader()}. Because the container can no longer
 * read a form body itself, form parameters ({@code application/x-www-form-urlencoded}) are parsed
 * here and follow the query-string parameters, as the Servlet specification orders them.
 */
public final class CachedBodyRequest extends HttpServletRequestWrapper {

  private final byte[] body;
  private boolean usingStream;
  private boolean usingReader;
  private Map<String, String[]> parameters;

  public CachedBodyRequest(HttpServletRequest request, byte[] body) {
    super(request);
    this.body = body;
  }

  /**
   * Reads the whole body of {@code request}, at most {@code limit} bytes.
   *
   * @return the body, or null if it is longer than {@code limit}
   */
  public static byte[] readBody(HttpServletRequest request, int limit) throws IOException {
    long declared = request.getContentLengthLong();
    if (declared > limit) {
      return null;
    }
    byte[] bytes = request.getInputStream().readNBytes(limit + 1);
    return bytes.length > limit ? null : bytes;
  }

  /** The body bytes as read. Not a copy: do not change them. */
  public byte[] body() {
    return body;
  }

  @Override
  public ServletInputStream getInputStream() {
    if (usingReader) {
      throw new IllegalStateException("getReader() was already called on this request");
    }
    usingStream = true;
    ByteArrayInputStream in = new ByteArrayInputStream(body);
    return new ServletInputStream() {
      @Override
      public int read() {
        return in.read();
      }

      @Override
      public int read(byte[] b, int off, int len) {
        return in.read(b, off, len);
      }

      @Override
      public boolean isFinished() {
        return in.available() == 0;
      }

      @Override
      public boolean isReady() {
        return true;
      }

      @Override
      public void setReadListener(ReadListener listener) {
        throw new IllegalStateException("async I/O is not supported on an idempotent route");
      }
    };
  }

  @Override
  public BufferedReader getReader() {
    if (usingStream) {
      throw new IllegalStateException("getInputStream() was already called on this request");
    }
    usingReader = true;
    return new BufferedReader(new InputStreamReader(new ByteArrayInputStream(body), charset()));
  }

  @Override
  public int getContentLength() {
    return body.length;
  }

  @Override
  public long getContentLengthLong() {
    return body.length;
  }

  @Override
  public String getParameter(String name) {
    String[] values = parameters().get(name);
    return values == null ? null : values[0];
  }

  @Override
  public Map<String, String[]> getParameterMap() {
    return parameters();
  }

  @Override
  public Enumeration<String> getParameterNames() {
    return Collections.enumeration(parameters().keySet());
  }

  @Override
  public String[] getParameterValues(String name) {
    String[] values = parameters().get(name);
    return values == null ? null : values.clone();
  }

  private Map<String, String[]> parameters() {
    if (parameters == null) {
      // The container has seen the body consumed, so its map holds the query string only.
      Map<String, List<String>> merged = new LinkedHashMap<>();
      super.getParameterMap().forEach((k, v) -> merged.put(k, new ArrayList<>(List.of(v))));
      if (isForm()) {
        Charset charset = charset();
        for (String pair : new String(body, StandardCharsets.ISO_8859_1).split("&")) {
          if (pair.isEmpty()) {
            continue;
          }
          int eq = pair.indexOf('=');
          String name = decode(eq < 0 ? pair : pair.substring(0, eq), charset);
          String value = eq < 0 ? "" : decode(pair.substring(eq + 1), charset);
          merged.computeIfAbsent(name, k -> new ArrayList<>()).add(value);
        }
      }
      Map<String, String[]> result = new LinkedHashMap<>();
      merged.forEach((k, v) -> result.put(k, v.toArray(String[]::new)));
      parameters = Collections.unmodifiableMap(result);
    }
    return parameters;
  }

  private static String decode(String text, Charset charset) {
    // The body was split as ISO-8859-1 (byte-preserving); re-read its bytes in the real charset.
    String bytesAsText = new String(text.getBytes(StandardCharsets.ISO_8859_1), charset);
    try {
      return URLDecoder.decode(bytesAsText, charset);
    } catch (IllegalArgumentException malformed) {
      return bytesAsText;
    }
  }

  private boolean isForm() {
    String type = getContentType();
    return type != null && type.toLowerCase(Locale.ROOT).trim()
        .startsWith("application/x-www-form-urlencoded");
  }

  private Charset charset() {
    String encoding = getCharacterEncoding();
    try {
      return encoding == null ? StandardCharsets.UTF_8 : Charset.forName(encoding);
    } catch (RuntimeException unknown) {
      return StandardCharsets.UTF_8;
    }
  }
}
