package dev.rolloutingest.table.storage;

import dev.rolloutingest.table.RolloutTableException;
import java.util.regex.Pattern;

/**
 * What an object-store failure means for whoever sees it. lance-core 7.0.0 reports every store error as text, so
 * access problems (wrong keys, a missing bucket, a refused signature, a malformed endpoint) are told from the rest by
 * what the message names.
 */
public final class StorageErrors {
    private StorageErrors() {}

    /** A SAS token's signature in a request URL that lance-core puts into its error text. */
    private static final Pattern SAS_SIGNATURE = Pattern.compile("(?i)(sig=)[^&\\s\"']+");

    /** A typed error for {@code what} failing on the table at {@code uri}. */
    public static RolloutTableException classify(String uri, String what, Exception e) {
        String message = redact(String.valueOf(e.getMessage()));
        Throwable cause = redactedChain(e);
        if (message.contains("403")
                || message.contains("SignatureDoesNotMatch")
                || message.contains("NoSuchBucket")
                || message.contains("InvalidAccessKeyId")
                || message.contains("AuthenticationFailed")
                || message.contains("AuthorizationFailure")
                || message.contains("ContainerNotFound")
                || message.contains("builder error")) {
            return new RolloutTableException.StorageAccess(uri, what, cause);
        }
        return new RolloutTableException("Table " + uri + ": " + what + " failed: " + message, cause);
    }

    /** The text with every SAS signature replaced: a signature is a credential and logs keep error texts. */
    public static String redact(String text) {
        return SAS_SIGNATURE.matcher(text).replaceAll("$1REDACTED");
    }

    /**
     * The failure as it is when no text of its chain holds a signature; else copies of it whose texts are redacted,
     * so no stack trace printed later shows the signature either.
     */
    private static Throwable redactedChain(Throwable e) {
        if (e == null) {
            return null;
        }
        Throwable cause = e.getCause() == e ? null : redactedChain(e.getCause());
        String text = String.valueOf(e.getMessage());
        if (redact(text).equals(text) && cause == e.getCause()) {
            return e;
        }
        RuntimeException copy = new RuntimeException(e.getClass().getName() + ": " + redact(text), cause);
        copy.setStackTrace(e.getStackTrace());
        return copy;
    }
}
