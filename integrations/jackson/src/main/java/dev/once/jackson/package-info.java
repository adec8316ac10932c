/**
 * JSON for Once, on Jackson: {@link dev.once.jackson.JsonCodec} stores results as JSON, and
 * {@link dev.once.jackson.CanonicalJson} fingerprints JSON request bodies by value, so a retry
 * whose keys come in another order or with other whitespace is still recognised as the same
 * request, while a different request under the same key is still caught.
 *
 * <pre>{@code
 * record Charge(String id, long amountCents, String currency) {}
 *
 * Once once = Once.builder(store).build();
 * Codec<Charge> codec = JsonCodec.of(Charge.class);
 *
 * Charge charge = once.execute(IdempotencyKey.of("payments.charge", idempotencyKeyHeader),
 *     CanonicalJson.fingerprint(requestBody),             // or (requestBody, "/amount", "/currency")
 *     codec,
 *     attempt -> gateway.charge(requestBody, attempt.key()));
 * }</pre>
 */
package dev.once.jackson;
