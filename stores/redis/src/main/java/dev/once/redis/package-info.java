/**
 * An {@link dev.once.spi.IdempotencyStore} on Redis, standalone or Cluster, through Lettuce:
 * {@link dev.once.redis.RedisStore} and its {@link dev.once.redis.Durability} grades.
 */
package dev.once.redis;
