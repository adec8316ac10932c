package dev.once.jaxrs;

import jakarta.ws.rs.WebApplicationException;
import jakarta.ws.rs.core.Response;
import jakarta.ws.rs.ext.ExceptionMapper;

/**
 * Answers every exception no mapper of the application maps, as Jakarta REST's default mapper
 * does (a {@link WebApplicationException}'s own response, else 500), after telling the protected
 * request's call what was thrown. Thrown before the resource came back (out of the resource, or
 * a reader or filter before it), an exception is a failure of the work for the {@code Once}'s
 * failure policy to judge (released for a retry, or a terminal failure), never a response to
 * store — whatever status it maps to, as the servlet filter's contract has it: a resource that
 * <em>returns</em> a 4xx response has it stored; one that <em>throws</em> has failed. A
 * {@code WebApplicationException} carrying an entity never reaches a mapper (the specification
 * sends its response as it is): {@link IdempotencyFilters.Boundary} sees it on Jersey and treats
 * it the same. Thrown after the resource came back (a writer, an interceptor; a response filter
 * where the runtime runs the feature's boundary filter first, which Jersey 4 does not reliably
 * do), an exception is not a failure of the work, which must not run again: the outcome is stored
 * without the body.
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
