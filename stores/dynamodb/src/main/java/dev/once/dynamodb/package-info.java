/**
 * An {@link dev.once.spi.IdempotencyStore} on Amazon DynamoDB: {@link dev.once.dynamodb.DynamoDbStore}.
 * Everything under {@code dev.once.dynamodb.internal} is implementation, not API.
 */
package dev.once.dynamodb;
