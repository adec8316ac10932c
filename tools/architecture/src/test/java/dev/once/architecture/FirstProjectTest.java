package dev.once.architecture;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

/**
 * Issue 24: docs/first-project has a complete Maven pom and a Gradle build for a newcomer's
 * service. They cannot be built here (Once is not on Maven Central, and the machine has no
 * Gradle), so this checks them by parsing: every Once artifact they name is a module of this
 * build, at this build's version, and every third-party version they pin is the one this build is
 * tested with — and the two files ask for the same dependencies.
 */
class FirstProjectTest {

  private static final Path ROOT = Poms.root();

  @Test
  void thePomAndTheGradleBuildAskForWhatThisBuildIsTestedWith() throws Exception {
    Document parent = Poms.read(ROOT.resolve("pom.xml"));
    Map<String, String> properties = Poms.properties(parent);
    String onceVersion = Poms.text(parent.getDocumentElement(), "version");
    Map<String, String> pom = pomDependencies(Poms.read(ROOT.resolve("docs/first-project/pom.xml")));
    Map<String, String> gradle = gradleDependencies(
        Files.readString(ROOT.resolve("docs/first-project/build.gradle.kts")));

    assertThat(gradle.keySet()).as("the same dependencies in both")
        .containsExactlyInAnyOrderElementsOf(pom.keySet());
    Map<String, String> tested = Map.of(
        "org.postgresql:postgresql", properties.get("postgresql.version"),
        "com.zaxxer:HikariCP", properties.get("hikaricp.version"),
        "dev.once:once-bom", onceVersion,
        "org.springframework.boot:spring-boot-dependencies", springBootVersion());
    for (Map<String, String> build : List.of(pom, gradle)) {
      build.forEach((artifact, version) -> {
        if (artifact.startsWith("dev.once:")) {
          String module = artifact.substring("dev.once:".length());
          assertThat(modules()).as("%s is a module of this build", artifact).contains(module);
        }
        if (version != null && tested.containsKey(artifact)) {
          assertThat(version).as("version of %s", artifact).isEqualTo(tested.get(artifact));
        }
      });
    }
    assertThat(pom).containsEntry("dev.once:once-bom", onceVersion)
        .containsEntry("org.postgresql:postgresql", properties.get("postgresql.version"));
    assertThat(Files.readString(ROOT.resolve("docs/first-project/pom.xml")))
        .contains("<version>" + springBootVersion() + "</version>");
    assertThat(Files.readString(ROOT.resolve("docs/first-project/build.gradle.kts")))
        .contains("id(\"org.springframework.boot\") version \"" + springBootVersion() + "\"");
  }

  /** The Spring Boot version the starter's example is built with. */
  private static String springBootVersion() throws Exception {
    return Poms.properties(Poms.read(ROOT.resolve("examples/spring-payments/pom.xml")))
        .get("spring-boot.version");
  }

  private static List<String> modules() {
    try {
      List<String> modules = new ArrayList<>();
      try (var poms = Files.walk(ROOT, 3)) {
        for (Path pom : poms.filter(p -> p.getFileName().toString().equals("pom.xml")).toList()) {
          Document d = Poms.read(pom);
          modules.add(Poms.text(d.getDocumentElement(), "artifactId"));
        }
      }
      return modules;
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  private static Map<String, String> pomDependencies(Document pom) {
    Map<String, String> out = new LinkedHashMap<>();
    NodeList deps = pom.getElementsByTagName("dependency");
    for (int i = 0; i < deps.getLength(); i++) {
      Element d = (Element) deps.item(i);
      String version = Poms.text(d, "version");
      out.put(Poms.text(d, "groupId") + ":" + Poms.text(d, "artifactId"), version.isEmpty() ? null : version);
    }
    return out;
  }

  private static final Pattern GRADLE_DEPENDENCY = Pattern.compile(
      "(?:implementation|testImplementation)\\((?:platform\\()?\"([^\":]+):([^\":]+)(?::([^\"]+))?\"");

  private static Map<String, String> gradleDependencies(String build) {
    Map<String, String> out = new LinkedHashMap<>();
    Matcher m = GRADLE_DEPENDENCY.matcher(build);
    while (m.find()) {
      String artifact = m.group(1) + ":" + m.group(2);
      if (artifact.equals("org.springframework.boot:spring-boot-dependencies")) {
        continue; // the Maven build gets it from spring-boot-starter-parent
      }
      out.putIfAbsent(artifact, m.group(3));
    }
    // The Maven pom's build plugin and test starter have no counterpart to compare.
    return out;
  }



}
