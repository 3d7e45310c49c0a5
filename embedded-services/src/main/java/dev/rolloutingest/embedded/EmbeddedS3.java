package dev.rolloutingest.embedded;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.gaul.s3proxy.BlobStores;
import org.gaul.s3proxy.S3Proxy;
import org.gaul.s3proxy.auth.AuthenticationType;
import org.gaul.s3proxy.blobstore.BlobStore;
import org.gaul.s3proxy.blobstore.ForwardingBlobStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A real S3 API server (S3Proxy over the local filesystem) in this JVM, on a free loopback port, with
 * one bucket created (Lance does not create buckets). It honours {@code If-None-Match: *}, which
 * Lance's commit on s3:// relies on.
 */
public final class EmbeddedS3 implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(EmbeddedS3.class);

    private final S3Proxy proxy;
    private final BlobStore blobStore;
    private final AtomicLong operations;
    private final AtomicBoolean refusing;
    private final String bucket;
    private final String accessKey;
    private final String secretKey;

    private EmbeddedS3(
            S3Proxy proxy,
            BlobStore blobStore,
            AtomicLong operations,
            AtomicBoolean refusing,
            String bucket,
            String accessKey,
            String secretKey) {
        this.proxy = proxy;
        this.blobStore = blobStore;
        this.operations = operations;
        this.refusing = refusing;
        this.bucket = bucket;
        this.accessKey = accessKey;
        this.secretKey = secretKey;
    }

    public static EmbeddedS3 start(Path baseDir, String bucket) {
        return start(baseDir, bucket, "rollout-access", "rollout-secret-key");
    }

    public static EmbeddedS3 start(Path baseDir, String bucket, String accessKey, String secretKey) {
        long started = System.nanoTime();
        try {
            Files.createDirectories(baseDir);
            Properties props = new Properties();
            props.setProperty(
                    "jclouds.filesystem.basedir", baseDir.toAbsolutePath().toString());
            props.setProperty("jclouds.identity", accessKey);
            props.setProperty("jclouds.credential", secretKey);
            BlobStore blobStore = BlobStores.create("filesystem", props);
            if (!blobStore.containerExists(bucket)) {
                blobStore.createContainer(bucket);
            }
            AtomicLong operations = new AtomicLong();
            AtomicBoolean refusing = new AtomicBoolean();
            S3Proxy proxy = S3Proxy.builder()
                    .blobStore(observed(blobStore, operations, refusing))
                    .endpoint(URI.create("http://127.0.0.1:0"))
                    .awsAuthentication(AuthenticationType.AWS_V2_OR_V4, accessKey, secretKey)
                    .ignoreUnknownHeaders(true)
                    .build();
            proxy.start();
            while (!"STARTED".equals(proxy.getState())) {
                Thread.sleep(10);
            }
            EmbeddedS3 s3 = new EmbeddedS3(proxy, blobStore, operations, refusing, bucket, accessKey, secretKey);
            log.info(
                    "S3 API up at {} (bucket {}, data {}) in {} ms",
                    s3.endpoint(),
                    bucket,
                    baseDir,
                    (System.nanoTime() - started) / 1_000_000);
            return s3;
        } catch (IOException e) {
            throw new UncheckedIOException("Could not prepare S3 directory " + baseDir, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("Interrupted while starting S3Proxy", e);
        } catch (Exception e) {
            throw new IllegalStateException("Could not start S3Proxy: " + e.getMessage(), e);
        }
    }

    /**
     * The blob store behind the S3 API, counting every call the server makes to it and failing them all while
     * an outage is switched on (the server then answers 500 to every request). It must be a
     * ForwardingBlobStore: S3Proxy unwraps those to learn the backend's capabilities (conditional PUTs);
     * every forwarded operation asks for its delegate once, which is where it is counted.
     */
    private static BlobStore observed(BlobStore store, AtomicLong operations, AtomicBoolean refusing) {
        return new ForwardingBlobStore(store) {
            @Override
            public BlobStore delegate() {
                operations.incrementAndGet();
                if (refusing.get()) {
                    throw new IllegalStateException("object store outage (test switch)");
                }
                return super.delegate();
            }
        };
    }

    /** Blob-store calls served so far: one or two per S3 request. */
    public long operations() {
        return operations.get();
    }

    /** Switches an outage on or off: while on, every request fails with HTTP 500. */
    public void refuseRequests(boolean refuse) {
        refusing.set(refuse);
        log.warn("S3 API outage {}", refuse ? "STARTED: every request fails" : "over");
    }

    public String endpoint() {
        return "http://127.0.0.1:" + proxy.getPort();
    }

    public String bucket() {
        return bucket;
    }

    public String accessKey() {
        return accessKey;
    }

    public String secretKey() {
        return secretKey;
    }

    /** {@code s3://bucket/prefix}. */
    public String uri(String prefix) {
        return "s3://" + bucket + "/" + prefix;
    }

    /** The storage options Lance needs to talk to this server. */
    public Map<String, String> lanceStorageOptions() {
        return Map.of(
                "aws_access_key_id",
                accessKey,
                "aws_secret_access_key",
                secretKey,
                "aws_endpoint",
                endpoint(),
                "aws_region",
                "us-east-1",
                "allow_http",
                "true",
                "aws_virtual_hosted_style_request",
                "false");
    }

    public BlobStore blobStore() {
        return blobStore;
    }

    @Override
    public void close() {
        try {
            proxy.stop();
        } catch (Exception e) {
            throw new IllegalStateException("Could not stop S3Proxy", e);
        }
    }
}
