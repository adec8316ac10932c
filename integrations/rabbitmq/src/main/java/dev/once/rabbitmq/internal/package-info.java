/** Implementation of the idempotent RabbitMQ consumer. Not API: may change in any release. */
package dev.once.rabbitmq.internal;
