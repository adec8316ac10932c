package dev.once.dynamodb.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.SchemaMissingException;
import dev.once.StoreUnavailableException;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.dynamodb.model.ResourceNotFoundException;

/**
 * A table that goes missing part-way is a set-up mistake, but it must not erase what the call knew
 * about its writes: a scan that changed records before the table went, or a write whose earlier
 * attempt timed out, may have been applied (found by review of issue 25's change: the mapping
 * said "nothing applied" for both).
 */
class AMissingTableAfterRecordsChangedMayHaveBeenAppliedTest {

  @Test
  void aScanThatChangedRecordsBeforeTheTableWentStillSaysSo() {
    ResourceNotFoundException gone = (ResourceNotFoundException) ResourceNotFoundException
        .builder().message("Requested resource not found").statusCode(400).build();

    RuntimeException thrown = Errors.map(gone, "once_records", "purgeExpired", true);

    assertThat(thrown).isInstanceOf(SchemaMissingException.class);
    assertThat(((StoreUnavailableException) thrown).mayHaveBeenApplied()).isTrue();
  }

  @Test
  void aWriteWhoseEarlierAttemptTimedOutMayHaveBeenApplied() {
    ResourceNotFoundException gone = (ResourceNotFoundException) ResourceNotFoundException
        .builder().message("Requested resource not found").statusCode(400).numAttempts(2).build();
    gone.addSuppressed(new RuntimeException("Request attempt 1 failure: Read timed out"));
    assertThat(Errors.mayHaveBeenApplied(gone)).isTrue();

    RuntimeException thrown = Errors.map(gone, "once_records", "complete of k");

    assertThat(((StoreUnavailableException) thrown).mayHaveBeenApplied()).isTrue();
  }

  @Test
  void aFirstAttemptOnAMissingTableAppliedNothing() {
    ResourceNotFoundException gone = (ResourceNotFoundException) ResourceNotFoundException
        .builder().message("Requested resource not found").statusCode(400).build();

    RuntimeException thrown = Errors.map(gone, "once_records", "claim of k");

    assertThat(thrown).isInstanceOf(SchemaMissingException.class);
    assertThat(((StoreUnavailableException) thrown).mayHaveBeenApplied()).isFalse();
  }
}
