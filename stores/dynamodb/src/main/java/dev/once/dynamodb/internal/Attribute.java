package dev.once.dynamodb.internal;

/**
 * The attributes of a record item and their default names: the engine's side of the public
 * {@code RecordAttribute}, constant for constant (the store maps one to the other by name), so
 * this package does not depend back on the public one.
 */
public enum Attribute {
  /** The partition key (S): {@code scope + " " + tenant + " " + key}. */
  KEY("id"),
  /** IN_PROGRESS, COMPLETED or FAILED (S). */
  STATUS("status"),
  /** SHA-256 of the request (B, 32 bytes). */
  FINGERPRINT("fingerprint"),
  /** The fencing token (N). */
  TOKEN("token"),
  /** Until when the claim is honoured (N, epoch microseconds). */
  LEASE_UNTIL("lease_until"),
  /** How many times the logic was started (N). */
  ATTEMPTS("attempts"),
  /**
   * The {@code ClaimRequest.claimId} of the claim that made the record IN_PROGRESS last (N), so
   * that the same claim re-sent (an SDK retry whose first answer was lost) is recognised as its
   * own. Absent on items written before claim ids existed: read as 0, matching no claim.
   */
  CLAIM_ID("claim_id"),
  /** Name of the last checkpoint (S). */
  CHECKPOINT_NAME("checkpoint_name"),
  /** Payload of the last checkpoint (B). */
  CHECKPOINT_DATA("checkpoint_data"),
  /** SUCCESS or FAILURE (S). */
  OUTCOME_KIND("outcome_kind"),
  /** Media type of the outcome body (S). */
  OUTCOME_MEDIA_TYPE("outcome_media_type"),
  /** The outcome body (B). */
  OUTCOME_BODY("outcome_body"),
  /** What the last retryable failure said (S). */
  LAST_ERROR("last_error"),
  /** When the key was first claimed (N, epoch microseconds). */
  CREATED_AT("created_at"),
  /** When the record last changed (N, epoch microseconds). */
  UPDATED_AT("updated_at"),
  /**
   * When the record expires (N, epoch microseconds, by the caller's clock): from then on the key
   * behaves as new. This attribute decides; {@link #TTL} only lets DynamoDB delete the item.
   */
  EXPIRES_AT("expires_at"),
  /** The expiry in epoch seconds, rounded up: the table's native TTL attribute (N). */
  TTL("ttl");

  private final String defaultName;

  Attribute(String defaultName) {
    this.defaultName = defaultName;
  }

  /** The name used unless configured otherwise. */
  public String defaultName() {
    return defaultName;
  }
}
