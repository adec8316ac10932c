package dev.once.architecture.cyclefixture.internal;

/** The engine half of the broken fixture: it depends back on the API's nested config. */
public final class Engine {
  public Object run(dev.once.architecture.cyclefixture.Api.Config config) {
    return config;
  }
}
