package dev.rolloutingest.table;

import dev.rolloutingest.table.storage.AzureOptions;
import java.net.URI;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Map;

/**
 * Where a rollout table lives: a local path (or file:// URI), {@code s3://bucket/prefix}, or Azure Blob Storage /
 * ADLS Gen2 as Lance names it ({@code az://container/prefix}, {@code abfss://container@account.dfs.core.windows.net/
 * prefix}), with the storage options Lance and the object-store client both use (aws_access_key_id, aws_endpoint,
 * azure_storage_account_name, ...).
 */
public record TableLocation(String uri, Map<String, String> storageOptions) {
    /** The kind of store a location is on: which client writes the files Lance's Java API does not. */
    public enum Store {
        LOCAL,
        S3,
        AZURE
    }

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
        if (uri.startsWith("gs://")) {
            // lance-core writes gs:// itself, but the seal files and listings need a client of their own, and no
            // GCS server can be run here to test one against: refused rather than shipped untested.
            throw new IllegalArgumentException("gs:// tables are not supported yet (the seal files and listings have"
                    + " no Google Cloud Storage client); use a local path, s3://, az:// or abfss://, was " + uri);
        }
        if (uri.contains("://") && storeOf(uri) == Store.LOCAL) {
            throw new IllegalArgumentException(
                    "table URI must be a local path, s3://bucket/prefix, az://container/prefix"
                            + " or abfss://container@account.dfs.core.windows.net/prefix, was " + uri);
        }
        if (!uri.contains("://")) {
            uri = Path.of(uri).toAbsolutePath().normalize().toString();
        }
        storageOptions = storageOptions == null ? Map.of() : Map.copyOf(storageOptions);
        if (storeOf(uri) == Store.AZURE) {
            AzureOptions.of(uri, storageOptions, System.getenv()); // an account it cannot name fails here, at start
        }
    }

    private static Store storeOf(String uri) {
        String lower = uri.toLowerCase(Locale.ROOT);
        if (lower.startsWith("s3://")) {
            return Store.S3;
        }
        if (lower.startsWith("az://") || lower.startsWith("abfss://")) {
            return Store.AZURE;
        }
        return Store.LOCAL;
    }

    public static TableLocation local(Path path) {
        return new TableLocation(path.toString(), Map.of());
    }

    public Store store() {
        return storeOf(uri);
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
