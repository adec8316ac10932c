/** Implementation of the idempotent SQS consumer. Not API: may change in any release. */
package dev.once.sqs.internal;
