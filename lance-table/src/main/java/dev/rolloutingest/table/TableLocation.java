package dev.rolloutingest.table;

import java.net.URI;
import java.nio.file.Path;
import java.util.Map;

/**
 * Where a rollout table lives: a local path (or file:// URI) or {@code s3://bucket/prefix}, with the
 * storage options Lance and the object-store client both use (aws_access_key_id, aws_endpoint, ...).
 */
public record TableLocation(String uri, Map<String, String> storageOptions) {
    public TableLocation {
        if (uri == null || uri.isBlank()) {
            throw new IllegalArgumentException("table URI is empty");
        }
        while (uri.length() > 1 && uri.endsWith("/")) {
            uri = uri.substring(0, uri.length() - 1);
        }
        if (uri.startsWith("file://")) {
            uri = Path.of(URI.create(uri)).toString();
        }
        if (uri.contains("://") && !uri.startsWith("s3://")) {
            throw new IllegalArgumentException("table URI must be a local path or s3://bucket/prefix, was " + uri);
        }
        if (!uri.contains("://")) {
            uri = Path.of(uri).toAbsolutePath().normalize().toString();
        }
        storageOptions = storageOptions == null ? Map.of() : Map.copyOf(storageOptions);
    }

    public static TableLocation local(Path path) {
        return new TableLocation(path.toString(), Map.of());
    }

    public boolean isS3() {
        return uri.startsWith("s3://");
    }

    /** The URI of a path below the table root, e.g. {@code _mem_wal/<shard>/<folder>}. */
    public String resolve(String relative) {
        return uri + "/" + relative;
    }

    @Override
    public String toString() {
        return uri; // storage options hold secrets: never printed
    }
}
