package dev.once.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.Status;
import java.sql.Connection;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.UUID;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A claim's insert names only the columns it writes, leaving the checkpoint, outcome and error to
 * their default (null): the record reads back as the full insert would have written it.
 */
class BareClaimInsertTest {

  private static final JdbcDialect PG = JdbcDialect.POSTGRESQL;

  /** A claim inserted by insertBareSql reads back as the record insertSql would have written. */
  @ParameterizedTest
  @EnumSource(JdbcDialect.class)
  void aClaimsRecordReadsBackWhole(JdbcDialect dialect) throws Exception {
    JdbcStore store = Databases.store(dialect);
    IdempotencyKey key = IdempotencyKey.of("bare", UUID.randomUUID().toString());
    Instant now = Instant.now().truncatedTo(ChronoUnit.MICROS);
    Claim c = store.claim(new ClaimRequest(key, Fingerprint.of("x"), now, Duration.ofSeconds(30),
        Duration.ofHours(1)));
    assertThat(c).isInstanceOf(Claim.Acquired.class);
    IdempotencyRecord r = store.find(key).orElseThrow();
    assertThat(r.status()).isEqualTo(Status.IN_PROGRESS);
    assertThat(r.attempts()).isEqualTo(1);
    assertThat(r.token()).isEqualTo(((Claim.Acquired) c).token());
    assertThat(r.claimId()).isNotZero();
    assertThat(r.checkpoint()).isNull();
    assertThat(r.outcome()).isNull();
    assertThat(r.lastError()).isNull();
    assertThat(r.leaseUntil()).isEqualTo(now.plusSeconds(30));
    assertThat(r.createdAt()).isEqualTo(now);
    assertThat(r.updatedAt()).isEqualTo(now);
    if (dialect == PG) {
      try (Connection conn = Databases.dataSource(PG).getConnection();
          java.sql.PreparedStatement ps = conn.prepareStatement("SELECT purge_after = expires_at,"
              + " checkpoint_name IS NULL AND outcome_kind IS NULL AND last_error IS NULL FROM "
              + Databases.Postgres.TABLE + " WHERE scope = ? AND tenant = ? AND idem_key = ?")) {
        ps.setString(1, key.scope());
        ps.setString(2, key.tenant());
        ps.setString(3, key.key());
        try (java.sql.ResultSet rs = ps.executeQuery()) {
          assertThat(rs.next()).isTrue();
          assertThat(rs.getBoolean(1)).isTrue();
          assertThat(rs.getBoolean(2)).isTrue();
        }
      }
    }
  }
}
