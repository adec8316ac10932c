package dev.once.architecture.cyclefixture.internal;

/** A fixture class with no cycle: it uses only the JDK. */
public final class Acyclic {
  public String name() {
    return "acyclic";
  }
}
