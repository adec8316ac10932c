/** Implementation of the idempotent NATS consumer. Not API: may change in any release. */
package dev.once.nats.internal;
