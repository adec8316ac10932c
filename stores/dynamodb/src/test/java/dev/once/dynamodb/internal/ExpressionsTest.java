package dev.once.dynamodb.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.dynamodb.internal.Expressions.Statement;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ExpressionsTest {

  @Test
  void readableExpressionsAreSentWithOneLetterPlaceholdersAndNoOptionalSpaces() {
    assertThat(Expressions.compact(ClaimProtocol.FRESH_CONDITION))
        .isEqualTo("attribute_not_exists(#i) OR #e<=:n");
    assertThat(Expressions.compact(DynamoDbEngine.COMPLETE_UPDATE))
        .isEqualTo("SET #s=:d,#o=:k,#m=:m,#b=:b,#u=:n,#e=:e,#x=:x");
    assertThat(Expressions.compact(ClaimProtocol.FRESH_UPDATE))
        .contains("#t=if_not_exists(#t,:z)+:o").endsWith(" REMOVE #p,#d,#o,#m,#b,#r");
  }

  @Test
  void aStatementNamesTheConfiguredAttributesOfItsPlaceholdersOnly() {
    AttributeNames names = AttributeNames.of(Map.of(Attribute.STATUS, "state"));

    Statement owned = Statement.of(names, DynamoDbEngine.OWNED, DynamoDbEngine.CHECKPOINT_UPDATE);

    assertThat(owned.condition()).isEqualTo("#t=:t AND #s=:i");
    assertThat(owned.names()).isEqualTo(Map.of("#t", "token", "#s", "state",
        "#p", "checkpoint_name", "#d", "checkpoint_data", "#u", "updated_at"));
  }

  @Test
  void anUnknownPlaceholderIsAnErrorInTheSourceNotARequest() {
    assertThatThrownBy(() -> Expressions.compact("#status = :nothing"))
        .isInstanceOf(IllegalStateException.class).hasMessageContaining(":nothing");
    assertThatThrownBy(() -> Expressions.compact("#nothing = :now"))
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("#nothing");
  }
}
