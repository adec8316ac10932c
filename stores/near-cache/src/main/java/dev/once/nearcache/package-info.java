/**
 * A bounded in-memory cache of completed records in front of any
 * {@link dev.once.spi.IdempotencyStore}: {@link dev.once.nearcache.NearCacheStore}.
 */
package dev.once.nearcache;
