/**
 * The JDBC store's implementation: the claim algorithm ({@link dev.once.jdbc.internal.JdbcEngine}),
 * per-dialect SQL, row mapping and the microsecond time representation. Not API.
 */
package dev.once.jdbc.internal;
