package dev.once.dynamodb.internal;

import static dev.once.dynamodb.internal.Attribute.ATTEMPTS;
import static dev.once.dynamodb.internal.Attribute.CHECKPOINT_DATA;
import static dev.once.dynamodb.internal.Attribute.CHECKPOINT_NAME;
import static dev.once.dynamodb.internal.Attribute.CLAIM_ID;
import static dev.once.dynamodb.internal.Attribute.CREATED_AT;
import static dev.once.dynamodb.internal.Attribute.EXPIRES_AT;
import static dev.once.dynamodb.internal.Attribute.FINGERPRINT;
import static dev.once.dynamodb.internal.Attribute.KEY;
import static dev.once.dynamodb.internal.Attribute.LAST_ERROR;
import static dev.once.dynamodb.internal.Attribute.LEASE_UNTIL;
import static dev.once.dynamodb.internal.Attribute.OUTCOME_BODY;
import static dev.once.dynamodb.internal.Attribute.OUTCOME_KIND;
import static dev.once.dynamodb.internal.Attribute.OUTCOME_MEDIA_TYPE;
import static dev.once.dynamodb.internal.Attribute.STATUS;
import static dev.once.dynamodb.internal.Attribute.TOKEN;
import static dev.once.dynamodb.internal.Attribute.UPDATED_AT;

import dev.once.Checkpoint;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.spi.EpochMicros;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.Outcome;
import dev.once.spi.Status;
import java.util.Map;
import software.amazon.awssdk.core.SdkBytes;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;

/** Converts between record items and {@link IdempotencyRecord}s. */
public final class RecordItems {

  private final AttributeNames names;
  private final String table;

  public RecordItems(AttributeNames names, String table) {
    this.names = names;
    this.table = table;
  }

  /**
   * The partition key value: {@code scope + " " + tenant + " " + key}. Scope and tenant never
   * contain a space (the key may), so the first two spaces split it unambiguously.
   */
  public static String keyString(IdempotencyKey key) {
    return key.scope() + ' ' + key.tenant() + ' ' + key.key();
  }

  /** The inverse of {@link #keyString}. */
  public static IdempotencyKey parseKey(String value) {
    int first = value.indexOf(' ');
    int second = first < 0 ? -1 : value.indexOf(' ', first + 1);
    if (second < 0) {
      throw new IllegalStateException("not a Once record key: '" + value + "'");
    }
    return IdempotencyKey.of(value.substring(0, first), value.substring(first + 1, second),
        value.substring(second + 1));
  }

  /** The primary key of {@code key}'s item. */
  public Map<String, AttributeValue> primaryKey(IdempotencyKey key) {
    return Map.of(names.get(KEY), s(keyString(key)));
  }

  /** The record in a full item. */
  public IdempotencyRecord decode(Map<String, AttributeValue> item) {
    IdempotencyKey key = parseKey(string(item, KEY));
    Status status = Status.valueOf(string(item, STATUS));
    Checkpoint checkpoint = null;
    if (item.containsKey(names.get(CHECKPOINT_NAME))) {
      checkpoint = Checkpoint.of(string(item, CHECKPOINT_NAME), bytes(item, CHECKPOINT_DATA));
    }
    Outcome outcome = null;
    if (item.containsKey(names.get(OUTCOME_KIND))) {
      outcome = Outcome.of(Outcome.Kind.valueOf(string(item, OUTCOME_KIND)),
          string(item, OUTCOME_MEDIA_TYPE), bytes(item, OUTCOME_BODY));
    }
    AttributeValue error = item.get(names.get(LAST_ERROR));
    // An item written before claim ids existed has none: 0, which no claim request carries.
    long claimId = item.containsKey(names.get(CLAIM_ID)) ? number(item, CLAIM_ID) : 0;
    return new IdempotencyRecord(key, status, Fingerprint.fromDigest(bytes(item, FINGERPRINT)),
        number(item, TOKEN), EpochMicros.toInstant(number(item, LEASE_UNTIL)),
        (int) number(item, ATTEMPTS), checkpoint, outcome, error == null ? null : error.s(),
        EpochMicros.toInstant(number(item, CREATED_AT)), EpochMicros.toInstant(number(item, UPDATED_AT)),
        EpochMicros.toInstant(number(item, EXPIRES_AT)), claimId);
  }

  /** The number in attribute {@code a} of {@code item}. */
  public long number(Map<String, AttributeValue> item, Attribute a) {
    AttributeValue v = require(item, a);
    if (v.n() == null) {
      throw notARecord(item, a, "a number");
    }
    return Long.parseLong(v.n());
  }

  private String string(Map<String, AttributeValue> item, Attribute a) {
    AttributeValue v = require(item, a);
    if (v.s() == null) {
      throw notARecord(item, a, "a string");
    }
    return v.s();
  }

  private byte[] bytes(Map<String, AttributeValue> item, Attribute a) {
    AttributeValue v = require(item, a);
    if (v.b() == null) {
      throw notARecord(item, a, "binary");
    }
    return v.b().asByteArrayUnsafe();
  }

  private AttributeValue require(Map<String, AttributeValue> item, Attribute a) {
    AttributeValue v = item.get(names.get(a));
    if (v == null) {
      throw notARecord(item, a, "present");
    }
    return v;
  }

  private IllegalStateException notARecord(Map<String, AttributeValue> item, Attribute a,
      String expected) {
    AttributeValue key = item.get(names.get(KEY));
    return new IllegalStateException("item " + (key == null ? "?" : key.s()) + " in table '"
        + table + "' is not a Once record: attribute '" + names.get(a) + "' (" + a
        + ") should be " + expected);
  }

  public static AttributeValue s(String value) {
    return AttributeValue.fromS(value);
  }

  public static AttributeValue n(long value) {
    return AttributeValue.fromN(Long.toString(value));
  }

  public static AttributeValue b(byte[] value) {
    return AttributeValue.fromB(SdkBytes.fromByteArray(value));
  }
}
