package dev.rolloutingest.table.storage;

import java.util.List;

/**
 * The few object-store operations Lance's Java API does not offer: listing a folder, small sidecar
 * files, and deleting a generation folder. Paths are relative to the table root.
 */
public interface ObjectStore extends AutoCloseable {
    /** One entry of a non-recursive listing: a child name and whether it is a folder. */
    record Entry(String name, boolean folder) {}

    /** Children of a folder (non-recursive); empty when the folder does not exist. */
    List<Entry> list(String folder);

    /** Every file below a folder, as paths relative to it ("a/b.json"); empty when the folder does not exist. */
    List<String> listRecursive(String folder);

    void put(String path, byte[] bytes);

    /** The file's bytes, or null when it does not exist. */
    byte[] get(String path);

    /** Deletes a file or a folder with everything below it; missing is fine. */
    void delete(String path);

    /**
     * Makes {@code to} a file with {@code from}'s bytes without moving them through this process: a hard link
     * on local disk (a copy where the file system has none), a server-side copy on S3. Fails when {@code to}
     * exists.
     */
    void copy(String from, String to);

    @Override
    void close();
}
