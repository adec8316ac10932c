package dev.once.dynamodb;

import dev.once.dynamodb.internal.Attribute;

/**
 * The attributes of a record item, each with a default name that
 * {@link DynamoDbStore.Builder#attributeName} can change (for instance to reuse a table whose TTL
 * attribute is already set). Attribute names count towards every item's size, so the defaults are
 * short.
 */
public enum RecordAttribute {
  /** The partition key (S): {@code scope + " " + tenant + " " + key}. */
  KEY,
  /** IN_PROGRESS, COMPLETED or FAILED (S). */
  STATUS,
  /** SHA-256 of the request (B, 32 bytes). */
  FINGERPRINT,
  /** The fencing token (N). */
  TOKEN,
  /** Until when the claim is honoured (N, epoch microseconds). */
  LEASE_UNTIL,
  /** How many times the logic was started (N). */
  ATTEMPTS,
  /**
   * The {@code ClaimRequest.claimId} of the claim that made the record IN_PROGRESS last (N), so
   * that the same claim re-sent (an SDK retry whose first answer was lost) is recognised as its
   * own. Absent on items written before claim ids existed: read as 0, matching no claim.
   */
  CLAIM_ID,
  /** Name of the last checkpoint (S). */
  CHECKPOINT_NAME,
  /** Payload of the last checkpoint (B). */
  CHECKPOINT_DATA,
  /** SUCCESS or FAILURE (S). */
  OUTCOME_KIND,
  /** Media type of the outcome body (S). */
  OUTCOME_MEDIA_TYPE,
  /** The outcome body (B). */
  OUTCOME_BODY,
  /** What the last retryable failure said (S). */
  LAST_ERROR,
  /** When the key was first claimed (N, epoch microseconds). */
  CREATED_AT,
  /** When the record last changed (N, epoch microseconds). */
  UPDATED_AT,
  /**
   * When the record expires (N, epoch microseconds, by the caller's clock): from then on the key
   * behaves as new. This attribute decides; {@link #TTL} only lets DynamoDB delete the item.
   */
  EXPIRES_AT,
  /** The expiry in epoch seconds, rounded up: the table's native TTL attribute (N). */
  TTL;

  /** The name used unless configured otherwise. */
  public String defaultName() {
    return Attribute.valueOf(name()).defaultName();
  }
}
