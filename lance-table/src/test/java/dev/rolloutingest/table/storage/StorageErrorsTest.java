package dev.rolloutingest.table.storage;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.table.RolloutTableException;
import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;

class StorageErrorsTest {
    @Test
    void aSasSignatureInLanceCoresErrorTextReachesNeitherTheMessageNorTheStackTrace() {
        RuntimeException lance = new RuntimeException("LanceError(IO): Error performing POST"
                + " http://127.0.0.1:1/devstoreaccount1/c?comp=batch&sv=2026-06-06&sp=rwdl&sig=S3cr%2Bt%3D in 5ms"
                + " - Server returned non-2xx status code: 403 Forbidden");
        RolloutTableException typed = StorageErrors.classify("az://c/t", "cleaning up", lance);
        assertThat(typed).isInstanceOf(RolloutTableException.StorageAccess.class);
        StringWriter trace = new StringWriter();
        typed.printStackTrace(new PrintWriter(trace));
        assertThat(trace.toString()).contains("sig=REDACTED").doesNotContain("S3cr");
    }

    @Test
    void aSignatureInACauseOfTheFailureIsRedactedToo() {
        Exception lance = new java.io.IOException(
                "cleanup failed", new RuntimeException("POST http://h/c?comp=batch&sig=S3cr%2Bt%3D: 500"));
        StringWriter trace = new StringWriter();
        StorageErrors.classify("az://c/t", "cleaning up", lance).printStackTrace(new PrintWriter(trace));
        assertThat(trace.toString()).contains("sig=REDACTED").doesNotContain("S3cr");
    }

    @Test
    void azuresAuthenticationFailuresAreStorageAccessErrors() {
        assertThat(StorageErrors.classify("az://c/t", "listing", new RuntimeException("AuthenticationFailed")))
                .isInstanceOf(RolloutTableException.StorageAccess.class);
    }
}
