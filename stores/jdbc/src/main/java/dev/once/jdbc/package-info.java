/**
 * A relational {@link dev.once.spi.IdempotencyStore}: PostgreSQL, MariaDB/MySQL and SQLite over a
 * plain {@link javax.sql.DataSource}, so idempotency records live in the database the business data
 * already lives in, with its durability and backups.
 *
 * <pre>{@code
 * HikariDataSource pool = new HikariDataSource(config);   // any DataSource; bring your own driver
 * JdbcStore store = JdbcStore.builder(pool)
 *     .dialect(JdbcDialect.POSTGRESQL)                     // optional: detected on the first call
 *     .table("once_records")                               // the default
 *     .build();
 * store.createSchema();                                    // explicit, idempotent, upgrades; or run
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
 * <p>Two execution modes share the table. <b>Lease mode</b> ({@link dev.once.Once} over a
 * {@link dev.once.jdbc.JdbcStore}) suits logic with any side effect. <b>Transactional mode</b>
 * ({@link dev.once.jdbc.TransactionalOnce}) commits the claim, the business SQL and the outcome in
 * one transaction, for logic whose effects all live in this database:
 *
 * <pre>{@code
 * TransactionalOnce txOnce = TransactionalOnce.builder(store).build();
 * Receipt receipt = txOnce.execute(key, fingerprint, codec, tx -> debit(tx.connection(), event));
 * }</pre>
 *
 * <p>Schedule {@link dev.once.Maintenance} to purge expired records and reap expired leases. Only
 * this package is API; {@code dev.once.jdbc.internal} may change in any release.
 */
package dev.once.jdbc;
