package dev.once.architecture;

import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.lang.ArchRule;
import com.tngtech.archunit.lang.EvaluationResult;
import com.tngtech.archunit.library.dependencies.SliceAssignment;
import com.tngtech.archunit.library.dependencies.SliceIdentifier;
import com.tngtech.archunit.library.dependencies.SliceRule;
import com.tngtech.archunit.library.dependencies.SlicesRuleDefinition;
import dev.once.architecture.cyclefixture.Api;
import dev.once.architecture.cyclefixture.internal.Acyclic;
import dev.once.architecture.cyclefixture.internal.Engine;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * No package cycles, in any module: every package of the project is its own slice (a package and
 * its subpackage are two slices, so {@code dev.once} ↔ {@code dev.once.internal} counts), and the
 * slices' dependencies must form no cycle. A cycle makes two packages one unit that can only be
 * read, changed and tested together; it is how an engine ends up needing its API's nested config,
 * or a public SPI type calling into the engine.
 *
 * <p>{@code slices().matching("dev.once.(**)")} alone would not do: it puts no class of the root
 * package {@code dev.once} in any slice, so the API ↔ engine cycles would go unseen. Hence the
 * slice assignment below, one slice per package. Fully-qualified names written inline are seen
 * too: ArchUnit reads the bytecode.
 */
class NoPackageCyclesTest {

  /**
   * Dependencies allowed, as {@code "origin -> target package"}, the origin a package or one
   * top-level class (with its nested classes): each closes a cycle that the three audiences of
   * core (ADR 0011) make unavoidable in Java, or one not broken yet. This list only shrinks: an
   * entry leaves it when its cycle is broken (the test fails on an entry that closes no cycle),
   * and none is ever added to make the rule pass.
   */
  static final Set<String> ALLOWED = Set.of(
      // core, the API's doors into its engine: a class that builds its implementation in another
      // package, which implements the API's types (Attempt, Once.Config, the exceptions, the batch
      // types), closes a cycle by construction. The only ways out are one package for API and
      // engine (the engine would be 14 package-private classes beside the 38 public ones a
      // newcomer reads) or finding the engine by reflection; ADR 0011 says why neither.
      "dev.once.Once -> dev.once.internal",
      "dev.once.batch.BatchExecutor -> dev.once.internal",
      // core, the API's entry points that take a store or are one: the application hands Once a
      // store (Once.Builder.store, Maintenance; InMemoryStore is one), and the SPI's signatures
      // speak the application's vocabulary (IdempotencyKey, Fingerprint, Checkpoint, the
      // exceptions a store throws). Unavoidable with IdempotencyStore in dev.once.spi and
      // IdempotencyKey in dev.once, as issue 25 places them.
      "dev.once.Once -> dev.once.spi",
      "dev.once.Maintenance -> dev.once.spi",
      "dev.once.InMemoryStore -> dev.once.spi",
      // core, not broken yet: the SPI's reader of the step journal decodes the engine's journal
      // format (its one decoder; a second copy in the SPI would have to evolve with it).
      "dev.once.spi.StepJournal -> dev.once.internal");

  /** Every package under {@code dev.once}, the root package included, is its own slice. */
  static final SliceAssignment EVERY_PACKAGE = new SliceAssignment() {
    @Override
    public SliceIdentifier getIdentifierOf(JavaClass c) {
      String pkg = c.getPackageName();
      return pkg.equals("dev.once") || pkg.startsWith("dev.once.") ? SliceIdentifier.of(pkg)
          : SliceIdentifier.ignore();
    }

    @Override
    public String getDescription() {
      return "every package under dev.once";
    }
  };

  static ArchRule noPackageCycles(Set<String> allowed) {
    SliceRule rule = SlicesRuleDefinition.slices().assignedFrom(EVERY_PACKAGE)
        .should().beFreeOfCycles();
    for (String edge : new TreeSet<>(allowed)) {
      String[] ends = edge.split(" -> ");
      rule = rule.ignoreDependency(within(ends[0]), within(ends[1]));
    }
    return rule;
  }

  /**
   * The classes of a package (exactly that package, not its subpackages), or of one top-level
   * class and its nested classes.
   */
  private static DescribedPredicate<JavaClass> within(String packageOrClass) {
    return new DescribedPredicate<JavaClass>(packageOrClass) {
      @Override
      public boolean test(JavaClass c) {
        JavaClass base = c.getBaseComponentType();
        String top = base.getName().contains("$")
            ? base.getName().substring(0, base.getName().indexOf('$')) : base.getName();
        return base.getPackageName().equals(packageOrClass) || top.equals(packageOrClass);
      }
    };
  }

  /**
   * Each module is checked on its own classes, as a cycle is a module's own defect: over all
   * modules at once, ArchUnit reported only 12 of the old code's 17 cycles (none of JDBC's,
   * DynamoDB's, Kafka's, the servlet filter's or Spring Boot's).
   */
  @Test
  void noModuleHasAPackageCycle() throws IOException {
    List<Path> modules = ModuleBoundariesTest.compiledModules();
    assertThat(modules).hasSizeGreaterThan(10);
    List<String> cycles = new ArrayList<>();
    List<String> stale = new ArrayList<>(ALLOWED);
    for (Path module : modules) {
      String name = module.getParent().getParent().getFileName().toString();
      JavaClasses classes = new ClassFileImporter().importPath(module);
      EvaluationResult result = noPackageCycles(ALLOWED).evaluate(classes);
      for (String detail : result.getFailureReport().getDetails()) {
        cycles.add(name + ": " + detail);
      }
      // An allowed entry must still close a cycle, so that the list only shrinks.
      for (String entry : ALLOWED) {
        String origin = entry.split(" -> ")[0];
        if (classes.containPackage(origin) || classes.contain(origin)) {
          Set<String> without = new TreeSet<>(ALLOWED);
          without.remove(entry);
          if (noPackageCycles(without).evaluate(classes).hasViolation()) {
            stale.remove(entry);
          }
        }
      }
    }
    assertThat(cycles).as("package cycles (%d)", cycles.size()).isEmpty();
    assertThat(stale).as("allowed entries that close no cycle any more: remove them").isEmpty();
  }

  /** The rule must catch a real cycle, or the test above proves nothing. */
  @Test
  void theRuleCatchesACycleBetweenAPackageAndItsSubpackage() {
    JavaClasses classes = new ClassFileImporter().importClasses(Api.class, Api.Config.class,
        Engine.class, Acyclic.class);
    EvaluationResult result = noPackageCycles(Set.of()).evaluate(classes);
    assertThat(result.hasViolation()).isTrue();
    assertThat(result.getFailureReport().getDetails()).anySatisfy(detail ->
        assertThat(detail).contains("Cycle detected")
            .contains("dev.once.architecture.cyclefixture.internal")
            .contains(Engine.class.getName() + ".run(")
            .contains(Api.Config.class.getName()));
  }

  /** An allowed edge is the only way past the rule, and it names the edge exactly. */
  @Test
  void anAllowedEdgeBreaksTheFixturesCycle() {
    JavaClasses classes = new ClassFileImporter().importClasses(Api.class, Api.Config.class,
        Engine.class, Acyclic.class);
    EvaluationResult result = noPackageCycles(Set.of(
        "dev.once.architecture.cyclefixture.internal -> dev.once.architecture.cyclefixture"))
        .evaluate(classes);
    assertThat(result.hasViolation()).isFalse();
  }
}
