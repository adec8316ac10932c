package dev.once.architecture;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import javax.xml.parsers.DocumentBuilderFactory;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.w3c.dom.NodeList;

/** Reading this build's poms, for the tests that check files against them. */
final class Poms {

  private Poms() {}

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

  static Document read(Path pom) throws Exception {
    return DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(pom.toFile());
  }

  /** The pom's own {@code <properties>} (not those of a profile). */
  static Map<String, String> properties(Document pom) {
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

  /** The text of {@code parent}'s own child {@code tag}, or "". */
  static String text(Element parent, String tag) {
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
