package dev.once.jaxrs;

import jakarta.ws.rs.WebApplicationException;
import jakarta.ws.rs.core.Response;
import jakarta.ws.rs.ext.ExceptionMapper;

/**
 * Answers every exception no mapper of the application maps, as Jakarta REST's default mapper
 * does (a {@link WebApplicationException}'s own response, else 500), after telling the protected
 * request's call that the application threw: an exception out of the resource is a failure for
 * the {@code Once}'s failure policy to judge (released for a retry, or a terminal failure), never
 * a response to store.
 */
final class FailureMapper implements ExceptionMapper<Throwable> {

  @Override
  public Response toResponse(Throwable exception) {
    IdempotencyFilters.applicationThrew(exception);
    if (exception instanceof WebApplicationException e) {
      return e.getResponse();
    }
    return Response.serverError().build();
  }
}
