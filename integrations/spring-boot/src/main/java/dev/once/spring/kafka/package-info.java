/**
 * Spring Kafka listeners made idempotent by once-kafka, for the starter's auto-configuration:
 * {@link dev.once.spring.kafka.OnceKafkaListeners} and the {@code once.kafka.*}
 * {@link dev.once.spring.kafka.OnceKafkaProperties}. Needs once-kafka and spring-kafka.
 */
package dev.once.spring.kafka;
