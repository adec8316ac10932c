package dev.once.jaxrs;

import dev.once.Attempt;
import dev.once.Codecs;
import dev.once.testkit.http.ContractApp;
import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.FormParam;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.NotFoundException;
import jakarta.ws.rs.PATCH;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.PUT;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import jakarta.ws.rs.QueryParam;
import jakarta.ws.rs.container.ContainerRequestContext;
import jakarta.ws.rs.core.Context;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.NewCookie;
import jakarta.ws.rs.core.Response;
import jakarta.ws.rs.core.StreamingOutput;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;

/** The contract's application ({@link ContractApp}) as a JAX-RS resource. */
@Path("/")
public final class ContractResource {

  static final String TEXT = "text/plain;charset=UTF-8";

  private final ContractApp app;

  ContractResource(ContractApp app) {
    this.app = app;
  }

  private ContractApp.Handled handled(ContainerRequestContext request) {
    String user = request.getHeaderString("X-User");
    String caller = user != null ? user : String.valueOf(request.getHeaderString("X-Api-Key"));
    return app.handled(caller, String.valueOf(request.getHeaderString("Idempotency-Key")));
  }

  @GET
  @Path("{path: .*}")
  public Response get(@Context ContainerRequestContext request) {
    return text(200, "get " + handled(request).serial());
  }

  @POST
  @Path("{prefix: .*}/form")
  @Consumes(MediaType.APPLICATION_FORM_URLENCODED)
  public Response form(@Context ContainerRequestContext request, @FormParam("a") String a,
      @FormParam("b") List<String> b, @QueryParam("q") String q) {
    int serial = handled(request).serial();
    return text(200, "a=" + a + " b=" + Arrays.toString(b.toArray()) + " q=" + q + " #" + serial);
  }

  @POST
  @Path("{path: .*}")
  public Response post(@Context ContainerRequestContext request, @PathParam("path") String path,
      byte[] body) {
    return handle(request, path, body);
  }

  @PUT
  @Path("{path: .*}")
  public Response put(@Context ContainerRequestContext request, @PathParam("path") String path,
      byte[] body) {
    return handle(request, path, body);
  }

  @PATCH
  @Path("{path: .*}")
  public Response patch(@Context ContainerRequestContext request,
      @PathParam("path") String path, byte[] body) {
    return handle(request, path, body);
  }

  private Response handle(ContainerRequestContext request, String path, byte[] body) {
    ContractApp.Handled handled = handled(request);
    int n = handled.execution();
    int serial = handled.serial();
    String key = String.valueOf(request.getHeaderString("Idempotency-Key"));
    String[] segments = path.split("/");
    String action = segments[segments.length - 1];
    String previous = segments.length > 1 ? segments[segments.length - 2] : "";

    switch (previous) {
      case "status" -> {
        return text(Integer.parseInt(action), "status " + action + " #" + serial);
      }
      case "flushed", "held" -> {
        byte[] bytes = new byte[Integer.parseInt(action)];
        Arrays.fill(bytes, (byte) (previous.equals("held") ? 'h' : 'f'));
        StreamingOutput out = stream -> {
          stream.write(bytes);
          stream.flush();
          if (previous.equals("held")) {
            app.gate(key).pass();
          }
        };
        return Response.ok(out, MediaType.APPLICATION_OCTET_STREAM)
            .header("Content-Length", bytes.length).build();
      }
      case "big" -> {
        byte[] bytes = new byte[Integer.parseInt(action)];
        Arrays.fill(bytes, (byte) 'x');
        return Response.ok(bytes, MediaType.APPLICATION_OCTET_STREAM).build();
      }
      default -> { }
    }
    switch (action) {
      case "charges" -> {
        String json = "{\"id\":\"ch_" + serial + "\",\"request\":"
            + new String(body, StandardCharsets.UTF_8) + "}";
        return Response.status(201).type(MediaType.APPLICATION_JSON)
            .header("Location", "/api/charges/ch_" + serial)
            .header("X-Execution", Integer.toString(n))
            .cookie(new NewCookie.Builder("session").value("s" + serial).build())
            .entity(json.getBytes(StandardCharsets.UTF_8)).build();
      }
      case "slow" -> {
        if (n == 1) {
          app.gate(key).pass();
        } else {
          app.gate(key).entered.countDown();
        }
        return text(200, "slow #" + serial);
      }
      case "boom" -> {
        if (app.failsOnce(key)) {
          throw new IllegalStateException("handler crashed on purpose");
        }
        return text(200, "recovered #" + serial);
      }
      case "writer" -> {
        StreamingOutput out = stream -> {
          Writer writer = new OutputStreamWriter(stream, StandardCharsets.UTF_8);
          writer.write("héllo ✓ #" + serial);
          writer.flush();
          stream.flush();
          writer.write(" and more");
          writer.flush();
        };
        return Response.ok(out, TEXT).build();
      }
      case "reader" -> {
        return text(200, "read " + new String(body, StandardCharsets.UTF_8) + " #" + serial);
      }
      case "redirect" -> {
        return Response.seeOther(URI.create("/api/elsewhere/" + serial)).build();
      }
      case "senderror" -> throw new NotFoundException("nothing here");
      case "attempt" -> {
        return text(200, IdempotencyFeature.attempt(request).map(Attempt::key).orElse("none"));
      }
      case "stepped" -> {
        String mail = IdempotencyFeature.attempt(request).orElseThrow()
            .step("mail", Codecs.utf8(), k -> app.mail(key));
        return text(n == 1 ? 503 : 200, mail);
      }
      default -> {
        return text(200, "ok #" + serial);
      }
    }
  }

  private static Response text(int status, String body) {
    return Response.status(status).type(TEXT).entity(body.getBytes(StandardCharsets.UTF_8))
        .build();
  }
}
