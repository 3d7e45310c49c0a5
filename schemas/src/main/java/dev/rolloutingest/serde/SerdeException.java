package dev.rolloutingest.serde;

import org.apache.kafka.common.errors.SerializationException;

/**
 * Base of every serde failure. {@link #reason()} is a short stable code that the ingest DLQ puts in
 * its headers and metric tags, so each failure kind is countable without parsing messages.
 */
public class SerdeException extends SerializationException {
    private final String reason;

    public SerdeException(String reason, String message, Throwable cause) {
        super(message, cause);
        this.reason = reason;
    }

    public String reason() {
        return reason;
    }

    /**
     * True when the failure lies in the record itself (bytes, schema id, schema): a pipeline may dead-letter
     * it. False when the registry could not give an answer (down, refusing credentials, rate-limiting): the
     * record is fine and must be retried, never dead-lettered.
     */
    public boolean recordsFault() {
        return true;
    }

    /** The bytes are not in the Confluent wire format: wrong magic byte, too short, or trailing garbage. */
    public static final class InvalidWireFormat extends SerdeException {
        public InvalidWireFormat(String reason, String message) {
            super(reason, message, null);
        }

        public InvalidWireFormat(String reason, String message, Throwable cause) {
            super(reason, message, cause);
        }
    }

    /** The registry has no schema with the id framed into the bytes. */
    public static final class UnknownSchemaId extends SerdeException {
        private final int schemaId;

        public UnknownSchemaId(int schemaId, String message) {
            super("unknown-schema-id", message, null);
            this.schemaId = schemaId;
        }

        public int schemaId() {
            return schemaId;
        }
    }

    /** Writer and reader schemas cannot be resolved, or the registry rejected a schema (HTTP 409). */
    public static final class IncompatibleSchema extends SerdeException {
        public IncompatibleSchema(String message, Throwable cause) {
            super("schema-incompatible", message, cause);
        }
    }

    /** The registry could not be reached or answered with a server error after all retries. */
    public static final class RegistryUnavailable extends SerdeException {
        public RegistryUnavailable(String message, Throwable cause) {
            super("registry-unavailable", message, cause);
        }

        @Override
        public boolean recordsFault() {
            return false;
        }
    }

    /** The registry answered with an error that is neither of the above (bad request, auth, not found). */
    public static final class RegistryError extends SerdeException {
        private final int httpStatus;
        private final int errorCode;

        public RegistryError(int httpStatus, int errorCode, String message) {
            super("registry-error", message, null);
            this.httpStatus = httpStatus;
            this.errorCode = errorCode;
        }

        public int httpStatus() {
            return httpStatus;
        }

        public int errorCode() {
            return errorCode;
        }

        /** Authentication, authorization, proxy, timeout and rate-limit answers are the registry's side. */
        @Override
        public boolean recordsFault() {
            return switch (httpStatus) {
                case 401, 403, 407, 408, 429 -> false;
                default -> true;
            };
        }
    }
}
