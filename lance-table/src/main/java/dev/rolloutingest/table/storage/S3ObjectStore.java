package dev.rolloutingest.table.storage;

import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.TableLocation;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.AwsCredentialsProvider;
import software.amazon.awssdk.auth.credentials.AwsSessionCredentials;
import software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.S3ClientBuilder;
import software.amazon.awssdk.services.s3.model.Delete;
import software.amazon.awssdk.services.s3.model.ListObjectsV2Request;
import software.amazon.awssdk.services.s3.model.ListObjectsV2Response;
import software.amazon.awssdk.services.s3.model.NoSuchKeyException;
import software.amazon.awssdk.services.s3.model.ObjectIdentifier;
import software.amazon.awssdk.services.s3.model.S3Exception;
import software.amazon.awssdk.services.s3.model.S3Object;

/**
 * The S3 object store, configured from the same storage options Lance takes, so one set of settings
 * serves both: static keys (with {@code aws_session_token} for temporary ones) or the default AWS chain. A non-recursive listing is one LIST request per 1,000 children.
 */
final class S3ObjectStore implements ObjectStore {
    private final S3Client s3;
    private final String bucket;
    private final String prefix;
    private final String tableUri;

    S3ObjectStore(TableLocation location) {
        URI uri = URI.create(location.uri());
        this.bucket = uri.getHost();
        String path = uri.getPath() == null ? "" : uri.getPath();
        this.prefix = path.startsWith("/") ? path.substring(1) : path;
        this.tableUri = location.uri();
        Map<String, String> options = location.storageOptions();
        S3ClientBuilder builder = S3Client.builder()
                .httpClientBuilder(UrlConnectionHttpClient.builder())
                .region(Region.of(options.getOrDefault("aws_region", "us-east-1")))
                .forcePathStyle(
                        !"true".equalsIgnoreCase(options.getOrDefault("aws_virtual_hosted_style_request", "false")));
        if (options.containsKey("aws_endpoint")) {
            builder.endpointOverride(URI.create(options.get("aws_endpoint")));
        }
        builder.credentialsProvider(credentials(options));
        this.s3 = builder.build();
    }

    /**
     * The keys the options give (with a session token for temporary credentials), else the default AWS chain: env,
     * system properties, web identity (IRSA, through STS), profiles, container and instance roles. Option names and
     * aliases are Lance's (object_store's).
     */
    static AwsCredentialsProvider credentials(Map<String, String> options) {
        String keyId = first(options, "aws_access_key_id", "access_key_id");
        if (keyId == null) {
            return DefaultCredentialsProvider.builder().build();
        }
        String secret = first(options, "aws_secret_access_key", "secret_access_key");
        String token = first(options, "aws_session_token", "aws_token", "session_token", "token");
        return StaticCredentialsProvider.create(
                token == null
                        ? AwsBasicCredentials.create(keyId, secret == null ? "" : secret)
                        : AwsSessionCredentials.create(keyId, secret == null ? "" : secret, token));
    }

    private static String first(Map<String, String> options, String... names) {
        for (String name : names) {
            String value = options.get(name);
            if (value != null && !value.isBlank()) {
                return value.trim();
            }
        }
        return null;
    }

    private String key(String path) {
        if (path.isEmpty()) {
            return prefix; // the root itself (a catalog lists its tables there)
        }
        return prefix.isEmpty() ? path : prefix + "/" + path;
    }

    /** The key prefix of a folder's children ("" for the bucket's root). */
    private String folderKey(String folder) {
        String key = key(folder);
        return key.isEmpty() ? "" : key + "/";
    }

    @Override
    public List<Entry> list(String folder) {
        String folderKey = folderKey(folder);
        List<Entry> entries = new ArrayList<>();
        forEachPage(folder, true, page -> {
            page.commonPrefixes()
                    .forEach(p -> entries.add(new Entry(trimSlash(p.prefix().substring(folderKey.length())), true)));
            for (S3Object object : page.contents()) {
                entries.add(new Entry(object.key().substring(folderKey.length()), false));
            }
        });
        return entries;
    }

    @Override
    public List<String> listRecursive(String folder) {
        String folderKey = folderKey(folder);
        List<String> paths = new ArrayList<>();
        forEachPage(folder, false, page -> {
            for (S3Object object : page.contents()) {
                paths.add(object.key().substring(folderKey.length()));
            }
        });
        return paths;
    }

    /** Every page of a listing below the folder; {@code oneLevel}: children only (folders as common prefixes). */
    private void forEachPage(String folder, boolean oneLevel, Consumer<ListObjectsV2Response> pages) {
        String token = null;
        try {
            do {
                ListObjectsV2Request.Builder request =
                        ListObjectsV2Request.builder().bucket(bucket).prefix(folderKey(folder));
                if (oneLevel) {
                    request.delimiter("/");
                }
                ListObjectsV2Response page =
                        s3.listObjectsV2(request.continuationToken(token).build());
                pages.accept(page);
                token = page.isTruncated() ? page.nextContinuationToken() : null;
            } while (token != null);
        } catch (S3Exception e) {
            throw new RolloutTableException.StorageAccess(tableUri, "listing " + folder, e);
        }
    }

    @Override
    public void put(String path, byte[] bytes) {
        try {
            s3.putObject(b -> b.bucket(bucket).key(key(path)), RequestBody.fromBytes(bytes));
        } catch (S3Exception e) {
            throw new RolloutTableException.StorageAccess(tableUri, "writing " + path, e);
        }
    }

    @Override
    public byte[] get(String path) {
        try {
            return s3.getObjectAsBytes(b -> b.bucket(bucket).key(key(path))).asByteArray();
        } catch (NoSuchKeyException e) {
            return null;
        } catch (S3Exception e) {
            throw new RolloutTableException.StorageAccess(tableUri, "reading " + path, e);
        }
    }

    @Override
    public void copy(String from, String to) {
        try {
            s3.headObject(b -> b.bucket(bucket).key(key(to)));
            throw new IllegalStateException("Cannot copy to " + key(to) + ": it exists");
        } catch (NoSuchKeyException e) {
            // free
        } catch (S3Exception e) {
            if (e.statusCode() != 404) {
                throw e;
            }
        }
        s3.copyObject(b -> b.sourceBucket(bucket)
                .sourceKey(key(from))
                .destinationBucket(bucket)
                .destinationKey(key(to)));
    }

    @Override
    public void delete(String path) {
        String base = key(path);
        try {
            s3.deleteObject(b -> b.bucket(bucket).key(base));
            String token = null;
            do {
                ListObjectsV2Response page = s3.listObjectsV2(ListObjectsV2Request.builder()
                        .bucket(bucket)
                        .prefix(base + "/")
                        .continuationToken(token)
                        .build());
                if (!page.contents().isEmpty()) {
                    List<ObjectIdentifier> ids = page.contents().stream()
                            .map(o -> ObjectIdentifier.builder().key(o.key()).build())
                            .toList();
                    s3.deleteObjects(b -> b.bucket(bucket)
                            .delete(Delete.builder().objects(ids).build()));
                }
                token = page.isTruncated() ? page.nextContinuationToken() : null;
            } while (token != null);
        } catch (S3Exception e) {
            throw new RolloutTableException.StorageAccess(tableUri, "deleting " + path, e);
        }
    }

    private static String trimSlash(String s) {
        return s.endsWith("/") ? s.substring(0, s.length() - 1) : s;
    }

    @Override
    public void close() {
        s3.close();
    }
}
