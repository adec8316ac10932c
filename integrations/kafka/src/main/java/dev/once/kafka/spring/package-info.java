/**
 * Adapters for Spring Kafka listener containers (record and batch listeners). Optional: needs
 * {@code spring-kafka} on the class path.
 */
package dev.once.kafka.spring;
