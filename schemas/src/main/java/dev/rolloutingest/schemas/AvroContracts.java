package dev.rolloutingest.schemas;

import java.util.List;
import org.apache.avro.util.ClassSecurityValidator;

/**
 * The generated contract classes, and their admission to Avro 1.12's class security check: Avro refuses
 * to instantiate classes it was not told to trust, which would break every specific reader and writer.
 * Exactly these classes are trusted, nothing else.
 */
public final class AvroContracts {
    public static final List<Class<?>> CLASSES =
            List.of(Rollout.class, GenerationSealed.class, GenerationsMerged.class, MergeTrigger.class);
    private static boolean trusted;

    private AvroContracts() {}

    public static synchronized void trust() {
        if (trusted) {
            return;
        }
        ClassSecurityValidator.Builder builder = ClassSecurityValidator.builder();
        CLASSES.forEach(builder::add);
        ClassSecurityValidator.setGlobal(
                ClassSecurityValidator.composite(ClassSecurityValidator.getGlobal(), builder.build()));
        trusted = true;
    }
}
