package dev.once.architecture;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.w3c.dom.NodeList;

/**
 * Issue 23: importing {@code once-bom} pulled {@code software.amazon.awssdk:sqs} 2.54.15, which
 * does not resolve here, while the build pins 2.54.14. A user's build must resolve what ours
 * does: every version property and every managed dependency the BOM shares with the parent pom
 * has the same version in both.
 */
class BomAgreesWithTheBuildTest {

  private static final Path ROOT = root();

  /** The project root: the nearest folder above with bom/pom.xml. */
  static Path root() {
    Path dir = Path.of("").toAbsolutePath();
    while (dir != null && !Files.exists(dir.resolve("bom/pom.xml"))) {
      dir = dir.getParent();
    }
    if (dir == null) {
      throw new IllegalStateException("the project root (with bom/pom.xml) was not found");
    }
    return dir;
  }

  @Test
  void everyVersionTheBomSharesWithTheBuildIsTheSame() throws Exception {
    Document parent = read(ROOT.resolve("pom.xml"));
    Document bom = read(ROOT.resolve("bom/pom.xml"));
    Map<String, String> parentProperties = properties(parent);
    Map<String, String> bomProperties = properties(bom);

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

  private static Document read(Path pom) throws Exception {
    return DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(pom.toFile());
  }

  private static Map<String, String> properties(Document pom) {
    Map<String, String> out = new LinkedHashMap<>();
    NodeList props = pom.getDocumentElement().getElementsByTagName("properties");
    for (int i = 0; i < props.getLength(); i++) {
      if (props.item(i).getParentNode() != pom.getDocumentElement()) {
        continue;
      }
      NodeList children = props.item(i).getChildNodes();
      for (int j = 0; j < children.getLength(); j++) {
        if (children.item(j) instanceof Element e) {
          out.put(e.getTagName(), e.getTextContent().trim());
        }
      }
    }
    return out;
  }

  /** groupId:artifactId → version (properties resolved) of dependencyManagement's entries. */
  private static Map<String, String> managed(Document pom, Map<String, String> properties) {
    Map<String, String> out = new LinkedHashMap<>();
    NodeList managements = pom.getElementsByTagName("dependencyManagement");
    for (int m = 0; m < managements.getLength(); m++) {
      NodeList deps = ((Element) managements.item(m)).getElementsByTagName("dependency");
      for (int i = 0; i < deps.getLength(); i++) {
        Element d = (Element) deps.item(i);
        String artifact = text(d, "groupId") + ":" + text(d, "artifactId");
        String version = text(d, "version");
        if (version.startsWith("${") && version.endsWith("}")) {
          version = properties.getOrDefault(version.substring(2, version.length() - 1), version);
        }
        out.putIfAbsent(artifact, version); // the first entry wins, as in Maven
      }
    }
    return out;
  }

  private static String text(Element parent, String tag) {
    NodeList nodes = parent.getElementsByTagName(tag);
    for (int i = 0; i < nodes.getLength(); i++) {
      Node n = nodes.item(i);
      if (n.getParentNode() == parent) {
        return n.getTextContent().trim();
      }
    }
    return "";
  }
}
