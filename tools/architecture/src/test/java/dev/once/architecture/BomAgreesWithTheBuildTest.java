package dev.once.architecture;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

/**
 * Issue 23: importing {@code once-bom} pulled {@code software.amazon.awssdk:sqs} 2.54.15, which
 * does not resolve here, while the build pins 2.54.14. A user's build must resolve what ours
 * does: every version property and every managed dependency the BOM shares with the parent pom
 * has the same version in both.
 */
class BomAgreesWithTheBuildTest {

  private static final Path ROOT = Poms.root();

  @Test
  void everyVersionTheBomSharesWithTheBuildIsTheSame() throws Exception {
    Document parent = Poms.read(ROOT.resolve("pom.xml"));
    Document bom = Poms.read(ROOT.resolve("bom/pom.xml"));
    Map<String, String> parentProperties = Poms.properties(parent);
    Map<String, String> bomProperties = Poms.properties(bom);

    bomProperties.forEach((name, value) -> {
      if (parentProperties.containsKey(name)) {
        assertThat(value).as("property %s", name).isEqualTo(parentProperties.get(name));
      }
    });
    Map<String, String> parentManaged = managed(parent, parentProperties);
    Map<String, String> bomManaged = managed(bom, bomProperties);
    assertThat(bomManaged).isNotEmpty();
    bomManaged.forEach((artifact, version) -> {
      if (parentManaged.containsKey(artifact)) {
        assertThat(version).as("managed version of %s", artifact)
            .isEqualTo(parentManaged.get(artifact));
      }
    });
    assertThat(bomManaged).containsEntry("software.amazon.awssdk:sqs",
        parentManaged.get("software.amazon.awssdk:sqs"));
  }



  /** groupId:artifactId → version (properties resolved) of dependencyManagement's entries. */
  private static Map<String, String> managed(Document pom, Map<String, String> properties) {
    Map<String, String> out = new LinkedHashMap<>();
    NodeList managements = pom.getElementsByTagName("dependencyManagement");
    for (int m = 0; m < managements.getLength(); m++) {
      NodeList deps = ((Element) managements.item(m)).getElementsByTagName("dependency");
      for (int i = 0; i < deps.getLength(); i++) {
        Element d = (Element) deps.item(i);
        String artifact = Poms.text(d, "groupId") + ":" + Poms.text(d, "artifactId");
        String version = Poms.text(d, "version");
        if (version.startsWith("${") && version.endsWith("}")) {
          version = properties.getOrDefault(version.substring(2, version.length() - 1), version);
        }
        out.putIfAbsent(artifact, version); // the first entry wins, as in Maven
      }
    }
    return out;
  }

}
