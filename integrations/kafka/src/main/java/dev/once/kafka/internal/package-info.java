/** Implementation of the idempotent consumer. Not API: may change in any release. */
package dev.once.kafka.internal;
