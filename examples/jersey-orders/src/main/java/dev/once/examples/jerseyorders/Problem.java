package dev.once.examples.jerseyorders;

/** An RFC 9457 problem the resource answers itself ({@code application/problem+json}). */
public record Problem(String title, int status, String detail, String instance) {

  public static final String MEDIA_TYPE = "application/problem+json";
}
