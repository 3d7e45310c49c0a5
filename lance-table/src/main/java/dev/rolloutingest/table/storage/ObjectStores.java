package dev.rolloutingest.table.storage;

import dev.rolloutingest.table.TableLocation;

/** The object store a table location names, configured from the location's storage options. */
public final class ObjectStores {
    private ObjectStores() {}

    public static ObjectStore open(TableLocation location) {
        return switch (location.store()) {
            case S3 -> new S3ObjectStore(location);
            case AZURE -> new AzureObjectStore(AzureOptions.of(location, System.getenv()), location.uri());
            case LOCAL -> new LocalObjectStore(location);
        };
    }
}
