package dev.once.spring.web;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.KeyReusedException;
import dev.once.spring.IdempotentExceptionHandler;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.ApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;

/** An application's own {@link IdempotentExceptionHandler} bean replaces the starter's. */
@SpringBootTest(classes = {ProblemDetailsApplication.class,
    ProblemDetailsOverrideTest.MyAnswers.class},
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {
        "server.address=127.0.0.1",
        "once.jdbc.create-schema=true",
        "once.http.enabled=false"})
class ProblemDetailsOverrideTest {

  /** Reuse is a 409 in this API, with its own body; the other answers stay the starter's. */
  @TestConfiguration
  static class MyAnswers {
    @Bean
    IdempotentExceptionHandler myIdempotentAnswers() {
      return new IdempotentExceptionHandler() {
        @Override
        public ResponseEntity<ProblemDetail> keyReused(KeyReusedException e) {
          ProblemDetail problem = ProblemDetail.forStatusAndDetail(
              org.springframework.http.HttpStatus.CONFLICT, "pick a new key");
          problem.setType(URI.create("https://api.example.com/problems/key-reused"));
          return ResponseEntity.status(409).body(problem);
        }
      };
    }
  }

  @LocalServerPort
  int port;

  @Autowired
  ApplicationContext context;

  private final HttpClient http = HttpClient.newHttpClient();

  @Test
  void theApplicationsHandlerAnswers() throws Exception {
    assertThat(context.getBeansOfType(IdempotentExceptionHandler.class))
        .containsOnlyKeys("myIdempotentAnswers");
    post("/charges/k-mine?amount=1");
    HttpResponse<String> reuse = post("/charges/k-mine?amount=2");

    assertThat(reuse.statusCode()).isEqualTo(409);
    assertThat(reuse.body()).contains("https://api.example.com/problems/key-reused",
        "pick a new key");
    HttpResponse<String> missing = post("/orders");
    assertThat(missing.statusCode()).isEqualTo(400); // inherited
  }

  private HttpResponse<String> post(String path) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
        .POST(HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString());
  }
}
