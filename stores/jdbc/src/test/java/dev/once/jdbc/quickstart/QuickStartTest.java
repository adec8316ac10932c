package dev.once.jdbc.quickstart;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The README's quick start is this package's {@link QuickStart}, and it charges once. */
class QuickStartTest {

  @Test
  void runsAndChargesOnceForThreeDeliveries(@TempDir Path dir) {
    QuickStart.charges = 0;

    QuickStart.main(new String[] {dir.resolve("once.db").toString()});

    assertThat(QuickStart.charges).isEqualTo(1);
  }

  @Test
  void theReadmeShowsThisClassWordForWord() throws IOException {
    String source = Files.readString(Path.of(
        "src/test/java/dev/once/jdbc/quickstart/QuickStart.java"));
    String example = source.substring(source.indexOf("// README:begin\n") + 16,
        source.indexOf("// README:end"));
    String readme = Files.readString(Path.of("../../README.md"));

    assertThat(readme).as("README.md's quick start must be QuickStart.java between its markers"
        + " (copy it over)").contains("```java\n" + example + "```");
  }
}
