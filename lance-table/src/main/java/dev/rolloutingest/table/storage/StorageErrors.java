package dev.rolloutingest.table.storage;

import dev.rolloutingest.table.RolloutTableException;

/**
 * What an object-store failure means for whoever sees it. lance-core 7.0.0 reports every store error as text, so
 * access problems (wrong keys, a missing bucket, a refused signature, a malformed endpoint) are told from the rest by
 * what the message names.
 */
public final class StorageErrors {
    private StorageErrors() {}

    /** A typed error for {@code what} failing on the table at {@code uri}. */
    public static RolloutTableException classify(String uri, String what, RuntimeException e) {
        String message = String.valueOf(e.getMessage());
        if (message.contains("403")
                || message.contains("SignatureDoesNotMatch")
                || message.contains("NoSuchBucket")
                || message.contains("InvalidAccessKeyId")
                || message.contains("builder error")) {
            return new RolloutTableException.StorageAccess(uri, what, e);
        }
        return new RolloutTableException("Table " + uri + ": " + what + " failed: " + message, e);
    }
}
