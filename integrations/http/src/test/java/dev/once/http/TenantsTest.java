package dev.once.http;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.IdempotencyKey;
import org.junit.jupiter.api.Test;

class TenantsTest {

  @Test
  void keepsPlainIdentitiesAndDigestsTheRest() {
    assertThat(Tenants.normalize("alice@example.com")).isEqualTo("alice@example.com");
    assertThat(Tenants.normalize("")).isEmpty();
    for (String identity : new String[] {"Jane Doe", "jürgen", "x".repeat(129), "~alice"}) {
      String tenant = Tenants.normalize(identity);
      assertThat(tenant).startsWith("~").hasSize(44);
      // Valid for the store, whatever the identity was.
      IdempotencyKey.of("http", tenant, "k");
    }
  }

  @Test
  void aDigestCannotBeForgedByNamingItAsAnIdentity() {
    String victim = Tenants.normalize("Jane Doe");
    assertThat(Tenants.normalize(victim)).isNotEqualTo(victim);
  }
}
