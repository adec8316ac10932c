package dev.once.servlet;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatNullPointerException;

import dev.once.FailurePolicy;
import dev.once.InMemoryStore;
import dev.once.InvalidKeyException;
import dev.once.Once;
import java.time.Duration;
import org.assertj.core.api.Assertions;
import org.junit.jupiter.api.Test;

class IdempotencyFilterBuilderTest {

  final Once once = Once.builder(new InMemoryStore()).build();

  @Test
  void defaultsAreTheDocumentedOnes() {
    assertThat(IdempotencyFilter.builder(once).build().toString())
        .contains("methods=[PATCH, POST]", "paths=[/**]", "scope=http",
            "keyHeader=Idempotency-Key", "keyRequired=true", "storeServerErrors=false",
            "maxRequestBytes=1048576", "maxResponseBytes=1048576", "retryAfter=PT1S",
            "replayHeaders=[Content-Type, Content-Language, Content-Location, Location, ETag, "
                + "Last-Modified, Link]");
  }

  @Test
  void neverLetsSecretsOrFramingHeadersBeReplayed() {
    IdempotencyFilter.Builder builder = IdempotencyFilter.builder(once);
    for (String header : new String[] {"Set-Cookie", "set-cookie", "Authorization",
        "Proxy-Authorization", "Content-Length", "Transfer-Encoding", "Idempotent-Replayed"}) {
      assertThatIllegalArgumentException().isThrownBy(() -> builder.replayHeaders(header));
    }
    assertThatIllegalArgumentException().isThrownBy(() -> IdempotencyFilter.builder(once)
        .replayHeaders("Content-Type", "X-Session").neverStoreHeaders("x-session").build());
  }

  @Test
  void refusesSettingsThatCannotWork() {
    IdempotencyFilter.Builder builder = IdempotencyFilter.builder(once);
    assertThatIllegalArgumentException().isThrownBy(() -> builder.methods());
    assertThatIllegalArgumentException().isThrownBy(() -> builder.methods("PO ST"));
    assertThatIllegalArgumentException().isThrownBy(() -> builder.paths());
    assertThatIllegalArgumentException().isThrownBy(() -> builder.paths("payments"));
    assertThatIllegalArgumentException().isThrownBy(() -> builder.excludePaths("/a**"));
    assertThatIllegalArgumentException().isThrownBy(() -> builder.keyHeader("Idempotency Key"));
    assertThatIllegalArgumentException().isThrownBy(() -> builder.maxRequestBytes(0));
    assertThatIllegalArgumentException().isThrownBy(() -> builder.maxResponseBytes(-1));
    assertThatIllegalArgumentException().isThrownBy(() -> builder.retryAfter(Duration.ZERO));
    Assertions.assertThatThrownBy(() -> builder.scope("has space"))
        .isInstanceOf(InvalidKeyException.class);
    assertThatNullPointerException().isThrownBy(() -> IdempotencyFilter.builder(null));
    assertThatNullPointerException().isThrownBy(() -> builder.tenantResolver(null));
  }

  @Test
  void methodsAreMatchedUpperCase() {
    assertThat(IdempotencyFilter.builder(once).methods("put", "delete").build().toString())
        .contains("methods=[DELETE, PUT]");
  }

  @Test
  void acceptsAOnceWhosePolicyMakesEveryFailureTerminal() {
    Once strict = Once.builder(new InMemoryStore())
        .failurePolicy(FailurePolicy.retryAll().terminalOn(Throwable.class)).build();
    assertThat(IdempotencyFilter.builder(strict).build()).isNotNull();
  }
}
