package dev.once.servlet;

import jakarta.servlet.Filter;
import jakarta.servlet.http.HttpServlet;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.stream.Stream;
import org.apache.catalina.core.StandardContext;
import org.apache.catalina.LifecycleException;
import org.apache.catalina.connector.Connector;
import org.apache.catalina.startup.Tomcat;
import org.apache.tomcat.util.descriptor.web.FilterDef;
import org.apache.tomcat.util.descriptor.web.FilterMap;

/** An embedded Tomcat on 127.0.0.1 and a free port: the filters in order, then one servlet. */
final class TestServer implements AutoCloseable {

  private static final Logger TOMCAT_LOG = Logger.getLogger("org.apache");

  private final Tomcat tomcat;
  private final Path baseDir;
  private final int port;

  private TestServer(Tomcat tomcat, Path baseDir, int port) {
    this.tomcat = tomcat;
    this.baseDir = baseDir;
    this.port = port;
  }

  /** Starts a server running {@code filters} (each mapped to /*, in order) before {@code servlet}. */
  static TestServer start(Map<String, Filter> filters, HttpServlet servlet) {
    TOMCAT_LOG.setLevel(Level.WARNING);
    try {
      Path baseDir = Files.createTempDirectory("once-tomcat");
      Tomcat tomcat = new Tomcat();
      tomcat.setBaseDir(baseDir.toString());
      Connector connector = new Connector();
      connector.setPort(0);
      connector.setProperty("address", "127.0.0.1");
      tomcat.setConnector(connector);
      StandardContext context = (StandardContext) tomcat.addContext("", null);
      // Leak detection needs JVM flags the tests do not set; it only adds warnings at shutdown.
      context.setClearReferencesRmiTargets(false);
      context.setClearReferencesThreadLocals(false);
      Tomcat.addServlet(context, "app", servlet);
      context.addServletMappingDecoded("/", "app");
      new LinkedHashMap<>(filters).forEach((name, filter) -> {
        FilterDef def = new FilterDef();
        def.setFilterName(name);
        def.setFilter(filter);
        context.addFilterDef(def);
        FilterMap map = new FilterMap();
        map.setFilterName(name);
        map.addURLPattern("/*");
        context.addFilterMap(map);
      });
      tomcat.start();
      return new TestServer(tomcat, baseDir, connector.getLocalPort());
    } catch (IOException | LifecycleException e) {
      throw new IllegalStateException("cannot start Tomcat", e);
    }
  }

  int port() {
    return port;
  }

  URI uri(String pathAndQuery) {
    return URI.create("http://127.0.0.1:" + port + pathAndQuery);
  }

  @Override
  public void close() {
    try {
      tomcat.stop();
      tomcat.destroy();
    } catch (LifecycleException e) {
      throw new IllegalStateException("cannot stop Tomcat", e);
    } finally {
      try (Stream<Path> files = Files.walk(baseDir)) {
        files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      } catch (IOException ignored) {
        // A leftover temp directory is harmless.
      }
    }
  }
}
