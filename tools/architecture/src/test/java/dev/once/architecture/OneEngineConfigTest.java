package dev.once.architecture;

import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.domain.JavaMethod;
import com.tngtech.archunit.core.domain.JavaModifier;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.lang.ArchCondition;
import com.tngtech.archunit.lang.ArchRule;
import com.tngtech.archunit.lang.ConditionEvents;
import com.tngtech.archunit.lang.EvaluationResult;
import com.tngtech.archunit.lang.SimpleConditionEvent;
import com.tngtech.archunit.lang.syntax.ArchRuleDefinition;
import java.io.IOException;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * One engine, thin adapters (ADR 0009): how messages are retried, given up on and claimed is set
 * on core's {@code BatchConfig} alone, and the engine's vocabulary (handler, dead letter,
 * publisher, no-key policy) is core's {@code dev.once.batch}, so no adapter grows a second set of
 * defaults or a parallel type that drifts from the engine's.
 */
class OneEngineConfigTest {

  /** The engine's settings: only {@code dev.once.batch.BatchConfig.Builder} may declare them. */
  static final Set<String> ENGINE_SETTINGS =
      Set.of("maxAttempts", "retryBackoff", "inProgressBackoff", "noKeyPolicy", "batchClaims");

  /** The engine's types: only {@code dev.once.batch} may declare top-level types so named. */
  static final Set<String> ENGINE_TYPES = Set.of("DeadLetter", "DeadLetterPublisher",
      "NoKeyPolicy", "MessageHandler", "RecordHandler", "BatchConfig");

  static final ArchRule ENGINE_SETTINGS_ON_BATCH_CONFIG_ONLY = ArchRuleDefinition.classes()
      .should(new ArchCondition<JavaClass>("leave the engine's settings and types to"
          + " dev.once.batch") {
        @Override
        public void check(JavaClass c, ConditionEvents events) {
          if (c.getPackageName().equals("dev.once.batch")) {
            return;
          }
          boolean isPublic = c.getModifiers().contains(JavaModifier.PUBLIC);
          // Top-level types only: a properties group such as once.kafka.dead-letter.* may be a
          // nested DeadLetter.
          if (c.isTopLevelClass() && ENGINE_TYPES.contains(c.getSimpleName())) {
            events.add(SimpleConditionEvent.violated(c, ModuleBoundariesTest.moduleOf(c) + ": "
                + c.getName() + " duplicates an engine type of dev.once.batch"));
          }
          if (!isPublic || !c.getSimpleName().endsWith("Builder")) {
            return;
          }
          for (JavaMethod m : c.getMethods()) {
            if (m.getModifiers().contains(JavaModifier.PUBLIC)
                && ENGINE_SETTINGS.contains(m.getName())) {
              events.add(SimpleConditionEvent.violated(m, ModuleBoundariesTest.moduleOf(c) + ": "
                  + m.getFullName() + " is an engine setting: take a BatchConfig instead"));
            }
          }
        }
      });

  @Test
  void noAdapterCarriesTheEnginesSettingsOrTypes() throws IOException {
    JavaClasses classes = new ClassFileImporter()
        .importPaths(ModuleBoundariesTest.compiledModules());
    assertThat(classes.containPackage("dev.once.kafka")).isTrue();
    assertThat(classes.containPackage("dev.once.rabbitmq")).isTrue();
    ENGINE_SETTINGS_ON_BATCH_CONFIG_ONLY.check(classes);
  }

  /** The rule must catch a real violation, or the test above proves nothing. */
  @Test
  void theRuleCatchesAnAdapterBuilderWithItsOwnRetrySettings() {
    JavaClasses classes = new ClassFileImporter().importClasses(Builder.class,
        DeadLetter.class);
    EvaluationResult result = ENGINE_SETTINGS_ON_BATCH_CONFIG_ONLY.evaluate(classes);
    assertThat(result.getFailureReport().getDetails())
        .anySatisfy(d -> assertThat(d).contains("maxAttempts").contains("take a BatchConfig"))
        .anySatisfy(d -> assertThat(d).contains("duplicates an engine type"));
  }

  /** A deliberately broken adapter builder: the engine's setting, with defaults of its own. */
  public static final class Builder {
    public Builder maxAttempts(int attempts) {
      return this;
    }
  }

}

/** A deliberately broken adapter type: a parallel dead letter, top-level as a real one would be. */
record DeadLetter(String reason) {}
