/**
 * A relational {@link dev.once.spi.IdempotencyStore}: PostgreSQL, MariaDB/MySQL and SQLite over a
 * plain {@link javax.sql.DataSource}, so idempotency records live in the database the business data
 * already lives in, with its durability and backups.
 *
 * <pre>{@code
 * HikariDataSource pool = new HikariDataSource(config);   // any DataSource; bring your own driver
 * JdbcStore store = JdbcStore.builder(pool)
 *     .dialect(JdbcDialect.POSTGRESQL)                     // optional: detected from the driver
 *     .table("once_records")                               // the default
 *     .build();
 * store.createSchema();                                    // explicit and idempotent; or run
 *                                                          // JdbcDialect.POSTGRESQL.schema(table)
 *                                                          // from your migrations
 * Once once = Once.builder(store).build();
 * Charge charge = once.execute(key, fingerprint, codec,
 *     attempt -> gateway.charge(request, attempt.key()));
 *
 * // Embedded: one file, no server.
 * JdbcStore local = JdbcStore.sqlite(Path.of("once.db"));
 * local.createSchema();
 * }</pre>
 *
 * <p>Schedule {@link dev.once.Maintenance} to purge expired records and reap expired leases. Only
 * this package is API; {@code dev.once.jdbc.internal} may change in any release.
 */
package dev.once.jdbc;
