/** The Redis store's implementation. Not API: anything here may change in any release. */
package dev.once.redis.internal;
