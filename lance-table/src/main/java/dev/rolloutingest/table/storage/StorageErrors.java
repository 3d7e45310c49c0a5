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
    public static RolloutTableException classify(String uri, String what, RuntimeException e) {
        String message = redact(String.valueOf(e.getMessage()));
        RuntimeException cause = message.equals(String.valueOf(e.getMessage())) ? e : redacted(e, message);
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

    /** The same failure, its text redacted, so no stack trace printed later shows the signature either. */
    private static RuntimeException redacted(RuntimeException e, String message) {
        RuntimeException copy = new RuntimeException(e.getClass().getName() + ": " + message, e.getCause());
        copy.setStackTrace(e.getStackTrace());
        return copy;
    }
}
