package dev.once.examples.jerseyorders;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.databind.ObjectMapper;
import jakarta.ws.rs.BadRequestException;
import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.MultivaluedMap;
import jakarta.ws.rs.ext.MessageBodyReader;
import jakarta.ws.rs.ext.MessageBodyWriter;
import jakarta.ws.rs.ext.Provider;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.annotation.Annotation;
import java.lang.reflect.Type;

/**
 * Records to and from JSON with Jackson 2, which once-jaxrs already brings (in an application
 * with jersey-media-json-jackson, register {@code JacksonFeature} instead).
 */
@Provider
@Consumes(MediaType.APPLICATION_JSON)
@Produces({MediaType.APPLICATION_JSON, Problem.MEDIA_TYPE})
public final class JsonBodies implements MessageBodyReader<Record>, MessageBodyWriter<Record> {

  private final ObjectMapper json = new ObjectMapper();

  @Override
  public boolean isReadable(Class<?> type, Type genericType, Annotation[] annotations,
      MediaType mediaType) {
    return type.isRecord();
  }

  @Override
  public Record readFrom(Class<Record> type, Type genericType, Annotation[] annotations,
      MediaType mediaType, MultivaluedMap<String, String> headers, InputStream body)
      throws IOException {
    try {
      return json.readValue(body.readAllBytes(), type);
    } catch (JacksonException e) {
      throw new BadRequestException("the body is not a JSON " + type.getSimpleName(), e);
    }
  }

  @Override
  public boolean isWriteable(Class<?> type, Type genericType, Annotation[] annotations,
      MediaType mediaType) {
    return type.isRecord();
  }

  @Override
  public void writeTo(Record value, Class<?> type, Type genericType, Annotation[] annotations,
      MediaType mediaType, MultivaluedMap<String, Object> headers, OutputStream out)
      throws IOException {
    out.write(json.writeValueAsBytes(value)); // not writeValue(out, …), which closes the stream
  }
}
