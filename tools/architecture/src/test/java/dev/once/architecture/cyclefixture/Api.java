package dev.once.architecture.cyclefixture;

/**
 * A deliberately broken fixture for {@code NoPackageCyclesTest}: an API type that calls its engine
 * in a subpackage, which takes the API's nested config back — the shape of the old
 * {@code Once → internal.Execution → Once.Config}, a cycle between a package and its own child.
 */
public final class Api {
  public static final class Config {}

  public Object run() {
    return new dev.once.architecture.cyclefixture.internal.Engine().run(new Config());
  }
}
