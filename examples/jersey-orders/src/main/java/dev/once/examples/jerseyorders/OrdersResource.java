package dev.once.examples.jerseyorders;

import dev.once.Attempt;
import dev.once.jaxrs.IdempotencyFeature;
import jakarta.inject.Inject;
import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.container.ContainerRequestContext;
import jakarta.ws.rs.core.Context;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import java.net.URI;
import java.sql.SQLException;

/** {@code POST /orders} and {@code GET /orders/{id}}; Jersey injects the two services. */
@Path("/orders")
public final class OrdersResource {

  private final Orders orders;
  private final Warehouse warehouse;

  @Inject
  public OrdersResource(Orders orders, Warehouse warehouse) {
    this.orders = orders;
    this.warehouse = warehouse;
  }

  /**
   * Places an order and has the warehouse ship it. The feature runs this at most once per
   * {@code Idempotency-Key}: a retry gets the stored 201, body and {@code Location} with
   * {@code Idempotent-Replayed: true}, and the warehouse is called once. A 400 for a bad order is
   * an answer too: stored and replayed for its key.
   */
  @POST
  @Consumes(MediaType.APPLICATION_JSON)
  @Produces({MediaType.APPLICATION_JSON, Problem.MEDIA_TYPE})
  public Response place(OrderRequest request, @Context ContainerRequestContext context)
      throws SQLException {
    if (request.customer() == null || request.sku() == null || request.quantity() <= 0
        || !Orders.CATALOG.containsKey(request.sku())) {
      return Response.status(400).type(Problem.MEDIA_TYPE).entity(new Problem("Bad Request", 400,
          "a customer, a quantity above 0 and a sku of "
              + Orders.CATALOG.keySet().stream().sorted().toList() + " are required",
          "/orders")).build();
    }
    // The feature protects POST /orders, so the request has an attempt; its key is stable across
    // a re-run of this key, and the orders table is unique on it.
    Attempt attempt = IdempotencyFeature.attempt(context).orElseThrow();
    Order order = orders.place(attempt.key(), request);
    warehouse.pick(order);
    return Response.status(201).location(URI.create("/orders/" + order.id()))
        .type(MediaType.APPLICATION_JSON).entity(order).build();
  }

  @GET
  @Path("{id}")
  @Produces(MediaType.APPLICATION_JSON)
  public Response get(@PathParam("id") String id) throws SQLException {
    return orders.find(id).map(order -> Response.ok(order).build())
        .orElseGet(() -> Response.status(404).build());
  }
}
