package dev.rolloutingest.ingest;

/**
 * Where crash tests break the ingest app on purpose: the seam they reach from test scope ({@code FaultyIngestApp}
 * builds the app with a variant that halts the JVM). Production runs {@link #NONE}.
 */
interface IngestFaults {
    IngestFaults NONE = new IngestFaults() {};

    /** Called right after a generation is durable and before its event or offsets are committed. */
    default void afterGenerationWrite() {}

    /** Called on the writer thread as a generation write starts. */
    default void generationWriteStarting() {}

    /** Called on the writer thread after each table's generation of a seal is written. */
    default void afterTableGeneration() {}
}
