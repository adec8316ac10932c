package dev.once.architecture;

import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.core.domain.Dependency;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.lang.ArchCondition;
import com.tngtech.archunit.lang.ArchRule;
import com.tngtech.archunit.lang.ConditionEvents;
import com.tngtech.archunit.lang.EvaluationResult;
import com.tngtech.archunit.lang.SimpleConditionEvent;
import com.tngtech.archunit.lang.syntax.ArchRuleDefinition;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * No module uses another module's {@code internal} packages: what an adapter needs from core (or
 * from another module) must be public API, small and documented, so a change to a module's
 * internals can never break another module silently. One door is deliberate: core's engine
 * facade, {@code dev.once.internal.Engine} and the {@code CallEvents} it hands out, for engines of
 * other modules that must answer and tell exactly as {@code Once} does (JDBC's transactional mode;
 * ADR 0011). ADR 0007 says why this is an ArchUnit test
 * over every module's compiled classes rather than {@code module-info.java}.
 *
 * <p>A class's module is where it was loaded from: the {@code target/classes} directory of each
 * module of the reactor. This module is last in the reactor, so every other one is compiled.
 */
class ModuleBoundariesTest {

  /** Modules whose classes are not library code: the shaded benchmark jar mixes every module. */
  private static final List<String> NOT_CHECKED = List.of("benchmarks", "tools/architecture");

  /** The engine facade: the only classes of another module's internals a module may use. */
  static final List<String> ENGINE_FACADE = List.of("dev.once.internal.Engine",
      "dev.once.internal.CallEvents");

  static final ArchRule NO_FOREIGN_INTERNALS = ArchRuleDefinition.classes()
      .should(new ArchCondition<JavaClass>("use internal packages of their own module only") {
        @Override
        public void check(JavaClass origin, ConditionEvents events) {
          for (Dependency dependency : origin.getDirectDependenciesFromSelf()) {
            JavaClass target = dependency.getTargetClass().getBaseComponentType();
            if (isInternal(target) && !sameModule(origin, target)
                && !ENGINE_FACADE.contains(target.getName())) {
              events.add(SimpleConditionEvent.violated(dependency,
                  moduleOf(origin) + ": " + dependency.getDescription() + " — "
                      + target.getPackageName() + " is internal to " + moduleOf(target)));
            }
          }
        }
      });

  @Test
  void noModuleUsesAnotherModulesInternals() throws IOException {
    List<Path> modules = compiledModules();
    assertThat(modules).as("compiled modules under " + projectRoot()).hasSizeGreaterThan(10);
    JavaClasses classes = new ClassFileImporter().importPaths(modules);
    assertThat(classes.containPackage("dev.once.internal")).isTrue();
    NO_FOREIGN_INTERNALS.check(classes);
  }

  /** The rule must catch a real violation, or the test above proves nothing. */
  @Test
  void theRuleCatchesAClassOfAnotherModuleUsingCoreInternals() {
    JavaClasses classes = new ClassFileImporter().importClasses(ForeignInternalUse.class,
        dev.once.internal.Execution.class, dev.once.internal.Engine.class, dev.once.Once.class);
    EvaluationResult result = NO_FOREIGN_INTERNALS.evaluate(classes);
    assertThat(result.hasViolation()).isTrue();
    assertThat(result.getFailureReport().getDetails()).anySatisfy(detail ->
        assertThat(detail).contains(ForeignInternalUse.class.getName())
            .contains("dev.once.internal is internal to"));
    // Core's own use of its internals (Once → internal.Execution) is not a violation, nor is
    // the use of the engine facade.
    assertThat(result.getFailureReport().getDetails())
        .noneSatisfy(detail -> assertThat(detail).startsWith("core/"))
        .noneSatisfy(detail -> assertThat(detail).contains("dev.once.internal.Engine."));
  }

  /**
   * A deliberately broken class: code outside core reaching into core's internals past the
   * facade (and, allowed, through it).
   */
  static final class ForeignInternalUse {
    Object listener() {
      return dev.once.internal.Execution.NO_LISTENER;
    }

    Object call() {
      return dev.once.internal.Engine.startCall(null, System::nanoTime,
          dev.once.IdempotencyKey.of("s", "k"));
    }
  }

  private static boolean isInternal(JavaClass c) {
    String pkg = c.getPackageName();
    return pkg.startsWith("dev.once.") && (pkg.endsWith(".internal") || pkg.contains(".internal."));
  }

  private static boolean sameModule(JavaClass a, JavaClass b) {
    return moduleOf(a).equals(moduleOf(b));
  }

  /** The module directory (relative to the project root) or jar a class was loaded from. */
  static String moduleOf(JavaClass c) {
    Optional<URI> uri = c.getSource().map(s -> s.getUri());
    if (uri.isEmpty()) {
      return "?";
    }
    String path = uri.get().toString();
    String root = projectRoot().toUri().toString();
    int classes = path.indexOf("/target/");
    if (path.startsWith(root) && classes > 0) {
      return path.substring(root.length(), classes);
    }
    int bang = path.indexOf("!/");
    return bang > 0 ? path.substring(0, bang) : path;
  }

  private static Path projectRoot() {
    String root = System.getProperty("once.projectRoot");
    return root != null ? Path.of(root).toAbsolutePath() : Path.of("../..").toAbsolutePath()
        .normalize();
  }

  /** Every module's {@code target/classes}, one and two levels down from the project root. */
  static List<Path> compiledModules() throws IOException {
    try (Stream<Path> dirs = Files.find(projectRoot(), 4, (p, a) -> a.isDirectory()
        && p.endsWith(Path.of("target", "classes")))) {
      return dirs.filter(p -> {
        String module = projectRoot().relativize(p.getParent().getParent()).toString();
        return !module.isEmpty() && !NOT_CHECKED.contains(module) && !module.contains("target");
      }).sorted().collect(Collectors.toList());
    }
  }
}
