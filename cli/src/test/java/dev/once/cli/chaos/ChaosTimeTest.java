package dev.once.cli.chaos;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The times and ranges of {@code once chaos}'s options, and the proxy's reading of store URIs. */
class ChaosTimeTest {

  @Test
  void durations() {
    assertThat(ChaosTime.duration("--d", "3m")).isEqualTo(Duration.ofMinutes(3));
    assertThat(ChaosTime.duration("--d", "30s")).isEqualTo(Duration.ofSeconds(30));
    assertThat(ChaosTime.duration("--d", "1.5s")).isEqualTo(Duration.ofMillis(1500));
    assertThat(ChaosTime.duration("--d", "500ms")).isEqualTo(Duration.ofMillis(500));
    assertThat(ChaosTime.duration("--d", "1h")).isEqualTo(Duration.ofHours(1));
    assertThatThrownBy(() -> ChaosTime.duration("--d", "3")).hasMessage(
        "--d must be a time like 3m, 30s or 500ms, was 3");
    assertThatThrownBy(() -> ChaosTime.duration("--d", "-1s"))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void ranges() {
    ChaosTime.Range range = ChaosTime.range("--r", "1s-3s");
    assertThat(range).isEqualTo(new ChaosTime.Range(Duration.ofSeconds(1), Duration.ofSeconds(3)));
    assertThat(ChaosTime.range("--r", "1-3s")).isEqualTo(range);
    assertThat(ChaosTime.range("--r", "500ms-1s").toString()).isEqualTo("500ms-1s");
    assertThat(ChaosTime.range("--r", "2s").toString()).isEqualTo("2s");
    assertThat(ChaosTime.range("--r", "off")).isNull();
    Random random = new Random(1);
    for (int i = 0; i < 1000; i++) {
      assertThat(range.next(random)).isBetween(Duration.ofSeconds(1), Duration.ofSeconds(3));
    }
    assertThatThrownBy(() -> ChaosTime.range("--r", "3s-1s"))
        .hasMessage("--r: the range 3s-1s ends before it starts");
    assertThatThrownBy(() -> ChaosTime.range("--r", "often"))
        .hasMessageStartingWith("--r must be a time or a range");
  }

  @Test
  void formats() {
    assertThat(ChaosTime.format(Duration.ofMinutes(3))).isEqualTo("3m");
    assertThat(ChaosTime.format(Duration.ofSeconds(90))).isEqualTo("90s");
    assertThat(ChaosTime.format(Duration.ofMillis(2500))).isEqualTo("2.5s");
    assertThat(ChaosTime.format(Duration.ofMillis(20))).isEqualTo("20ms");
  }

  @Test
  void theProxyRewritesTheHostAndPortOfALoopbackStore() {
    ChaosProxy.Route route = ChaosProxy.route(
        "postgres://app:s3cr%40t@localhost:5433/app?sslmode=disable", "postgres://app:***@...");
    assertThat(route.port()).isEqualTo(5433);
    assertThat(route.through(40000))
        .isEqualTo("postgres://app:s3cr%40t@127.0.0.1:40000/app?sslmode=disable");
    assertThat(ChaosProxy.route("redis://127.0.0.1", "redis").through(7))
        .isEqualTo("redis://127.0.0.1:7");
    assertThat(ChaosProxy.route("redis://:pw@127.0.0.1:6380/2", "redis").through(7))
        .isEqualTo("redis://:pw@127.0.0.1:7/2");
    assertThatThrownBy(() -> ChaosProxy.route("mariadb://root@10.0.0.9/test", "m"))
        .hasMessageContaining("loopback");
    assertThatThrownBy(() -> ChaosProxy.route("dynamodb://local", "d"))
        .hasMessageContaining("--proxy works with");
  }
}
