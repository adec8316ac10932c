/**
 * The container-neutral half of Once's HTTP integrations ({@code once-servlet},
 * {@code once-jaxrs}, {@code once-webflux}): the problem vocabulary ({@link dev.once.http.IdempotencyProblem},
 * {@link dev.once.http.ProblemJson}), the key header ({@link dev.once.http.KeyHeader}), the request
 * fingerprint ({@link dev.once.http.RequestFingerprint}), tenants ({@link dev.once.http.Tenants}),
 * path patterns ({@link dev.once.http.PathPatterns}) and the stored response with its one format
 * ({@link dev.once.http.StoredResponse}, {@link dev.once.http.StoredResponseCodec}), so that every
 * adapter fingerprints, stores and answers alike and a key answered by one replays through
 * another. For adapter authors; applications use an adapter.
 */
package dev.once.http;
