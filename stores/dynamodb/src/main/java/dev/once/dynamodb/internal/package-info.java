/** Implementation of the DynamoDB store. Not API: may change in any release. */
package dev.once.dynamodb.internal;
