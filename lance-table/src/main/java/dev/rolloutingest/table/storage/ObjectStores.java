package dev.rolloutingest.table.storage;

import dev.rolloutingest.table.TableLocation;

/** The object store a table location names: S3 (s3:// URIs, with the location's storage options) or local disk. */
public final class ObjectStores {
    private ObjectStores() {}

    public static ObjectStore open(TableLocation location) {
        return location.isS3() ? new S3ObjectStore(location) : new LocalObjectStore(location);
    }
}
