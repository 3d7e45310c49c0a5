package dev.rolloutingest.table.storage;

import com.azure.core.credential.AccessToken;
import com.azure.core.credential.TokenCredential;
import com.azure.core.exception.AzureException;
import com.azure.core.http.HttpClient;
import com.azure.core.http.jdk.httpclient.JdkHttpClientBuilder;
import com.azure.core.util.BinaryData;
import com.azure.core.util.polling.SyncPoller;
import com.azure.identity.ClientSecretCredentialBuilder;
import com.azure.identity.DefaultAzureCredentialBuilder;
import com.azure.identity.WorkloadIdentityCredentialBuilder;
import com.azure.storage.blob.BlobContainerClient;
import com.azure.storage.blob.BlobServiceClientBuilder;
import com.azure.storage.blob.models.BlobCopyInfo;
import com.azure.storage.blob.models.BlobErrorCode;
import com.azure.storage.blob.models.BlobItem;
import com.azure.storage.blob.models.BlobListDetails;
import com.azure.storage.blob.models.BlobRequestConditions;
import com.azure.storage.blob.models.BlobStorageException;
import com.azure.storage.blob.models.CopyStatusType;
import com.azure.storage.blob.models.ListBlobsOptions;
import com.azure.storage.blob.options.BlobBeginCopyOptions;
import com.azure.storage.common.StorageSharedKeyCredential;
import dev.rolloutingest.table.RolloutTableException;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import reactor.core.publisher.Mono;

/**
 * The Azure Blob Storage object store (also ADLS Gen2 accounts, through their blob endpoint, as Lance reaches them),
 * with the account, endpoint and credential Lance's storage options name ({@link AzureOptions}). A non-recursive
 * listing is one request per 5,000 children.
 *
 * <p>On an account with a hierarchical namespace (ADLS Gen2) folders are entries of their own: a flat listing shows
 * them as empty blobs marked {@code hdi_isfolder}, and they outlive the files below them. Listings leave them out
 * and a delete removes them deepest first, so a collected generation's folder is gone from the next listing.
 */
final class AzureObjectStore implements ObjectStore {
    /** The metadata an ADLS Gen2 account gives a folder's entry when it is listed through the blob API. */
    static final String FOLDER_MARKER = "hdi_isfolder";

    private static final Duration COPY_WAIT = Duration.ofMinutes(5);

    /** One JDK HTTP client (thread-safe, one selector thread) for every table's store and credential in the JVM. */
    private static final HttpClient HTTP = new JdkHttpClientBuilder().build();

    private final BlobContainerClient container;
    private final AzureOptions options;
    private final String tableUri;

    AzureObjectStore(AzureOptions options, String tableUri) {
        this.options = options;
        this.tableUri = tableUri;
        BlobServiceClientBuilder builder =
                new BlobServiceClientBuilder().endpoint(options.endpoint()).httpClient(HTTP);
        AzureOptions.Credential credential = options.credential();
        if (credential instanceof AzureOptions.AccountKey key) {
            builder.credential(new StorageSharedKeyCredential(options.account(), key.key()));
        } else if (credential instanceof AzureOptions.SasToken sas) {
            builder.sasToken(sas.token());
        } else if (credential instanceof AzureOptions.BearerToken token) {
            builder.credential(staticToken(token.token()));
        } else {
            builder.credential(entraId((AzureOptions.EntraId) credential, HTTP));
        }
        this.container = builder.buildClient().getBlobContainerClient(options.container());
    }

    /** A token given as it is (Lance's azure_storage_token): it is used until the server refuses it. */
    private static TokenCredential staticToken(String token) {
        AccessToken access = new AccessToken(token, OffsetDateTime.now().plusYears(1));
        return request -> Mono.just(access);
    }

    private static TokenCredential entraId(AzureOptions.EntraId entra, HttpClient http) {
        if (entra.clientSecret() != null) {
            ClientSecretCredentialBuilder builder = new ClientSecretCredentialBuilder()
                    .tenantId(entra.tenantId())
                    .clientId(entra.clientId())
                    .clientSecret(entra.clientSecret())
                    .httpClient(http);
            if (entra.authorityHost() != null) {
                builder.authorityHost(entra.authorityHost());
            }
            return builder.build();
        }
        if (entra.federatedTokenFile() != null && entra.clientId() != null && entra.tenantId() != null) {
            WorkloadIdentityCredentialBuilder builder = new WorkloadIdentityCredentialBuilder()
                    .tenantId(entra.tenantId())
                    .clientId(entra.clientId())
                    .tokenFilePath(entra.federatedTokenFile())
                    .httpClient(http);
            if (entra.authorityHost() != null) {
                builder.authorityHost(entra.authorityHost());
            }
            return builder.build();
        }
        DefaultAzureCredentialBuilder builder = new DefaultAzureCredentialBuilder().httpClient(http);
        if (entra.clientId() != null) {
            builder.managedIdentityClientId(entra.clientId()).workloadIdentityClientId(entra.clientId());
        }
        if (entra.tenantId() != null) {
            builder.tenantId(entra.tenantId());
        }
        if (entra.authorityHost() != null) {
            builder.authorityHost(entra.authorityHost());
        }
        return builder.build();
    }

    private String key(String path) {
        if (path.isEmpty()) {
            return options.prefix(); // the root itself (a catalog lists its tables there)
        }
        return options.prefix().isEmpty() ? path : options.prefix() + "/" + path;
    }

    /** The name prefix of a folder's children ("" for the container's root). */
    private String folderKey(String folder) {
        String key = key(folder);
        return key.isEmpty() ? "" : key + "/";
    }

    private static ListBlobsOptions under(String prefix) {
        return new ListBlobsOptions().setPrefix(prefix).setDetails(new BlobListDetails().setRetrieveMetadata(true));
    }

    private static boolean isFolderMarker(BlobItem item) {
        Map<String, String> metadata = item.getMetadata();
        return metadata != null && "true".equalsIgnoreCase(metadata.get(FOLDER_MARKER));
    }

    @Override
    public List<Entry> list(String folder) {
        String folderKey = folderKey(folder);
        // A folder of a hierarchical namespace can come back both as a prefix and as its marker: one entry each.
        Map<String, Entry> entries = new LinkedHashMap<>();
        try {
            for (BlobItem item : container.listBlobsByHierarchy("/", under(folderKey), null)) {
                String name = trimSlash(item.getName().substring(folderKey.length()));
                if (Boolean.TRUE.equals(item.isPrefix()) || isFolderMarker(item)) {
                    entries.put(name, new Entry(name, true));
                } else {
                    entries.putIfAbsent(name, new Entry(name, false));
                }
            }
        } catch (AzureException e) {
            throw failure("listing " + folder, e);
        }
        return new ArrayList<>(entries.values());
    }

    @Override
    public List<String> listRecursive(String folder) {
        String folderKey = folderKey(folder);
        List<String> paths = new ArrayList<>();
        try {
            for (BlobItem item : container.listBlobs(under(folderKey), null)) {
                if (!isFolderMarker(item)) {
                    paths.add(item.getName().substring(folderKey.length()));
                }
            }
        } catch (AzureException e) {
            throw failure("listing " + folder, e);
        }
        return paths;
    }

    @Override
    public void put(String path, byte[] bytes) {
        try {
            container.getBlobClient(key(path)).upload(BinaryData.fromBytes(bytes), true);
        } catch (AzureException e) {
            throw failure("writing " + path, e);
        }
    }

    @Override
    public byte[] get(String path) {
        try {
            return container.getBlobClient(key(path)).downloadContent().toBytes();
        } catch (BlobStorageException e) {
            if (e.getErrorCode() == BlobErrorCode.BLOB_NOT_FOUND) {
                return null;
            }
            throw failure("reading " + path, e);
        } catch (AzureException e) {
            throw failure("reading " + path, e);
        }
    }

    /**
     * A server-side copy within the account. The source is authorised by the request's shared key; with a SAS the
     * source URL carries the same signature, which must then allow reads.
     */
    @Override
    public void copy(String from, String to) {
        String source = container.getBlobClient(key(from)).getBlobUrl();
        if (options.credential() instanceof AzureOptions.SasToken sas) {
            source = source + "?" + sas.token();
        }
        try {
            SyncPoller<BlobCopyInfo, Void> poller = container
                    .getBlobClient(key(to))
                    .beginCopy(new BlobBeginCopyOptions(source)
                            .setDestinationRequestConditions(new BlobRequestConditions().setIfNoneMatch("*"))
                            .setPollInterval(Duration.ofMillis(200)));
            CopyStatusType status =
                    poller.waitForCompletion(COPY_WAIT).getValue().getCopyStatus();
            if (status != CopyStatusType.SUCCESS) {
                throw new IllegalStateException("Copy of " + from + " to " + to + " ended " + status);
            }
        } catch (AzureException e) {
            throw failure("copying " + from + " to " + to, e);
        }
    }

    @Override
    public void delete(String path) {
        String base = key(path);
        try {
            List<String> names = new ArrayList<>();
            for (BlobItem item : container.listBlobs(new ListBlobsOptions().setPrefix(base + "/"), null)) {
                names.add(item.getName());
            }
            names.add(base); // the file itself, or the folder's own entry on a hierarchical namespace
            // Deepest first: a hierarchical namespace refuses to delete a folder that still holds something.
            names.sort(Comparator.comparingInt(AzureObjectStore::depth).reversed());
            for (String name : names) {
                container.getBlobClient(name).deleteIfExists();
            }
        } catch (AzureException e) {
            throw failure("deleting " + path, e);
        }
    }

    private static int depth(String name) {
        return (int) name.chars().filter(c -> c == '/').count();
    }

    /** A refused request or credential (the chain found none, its token was refused): the store's failure. */
    private RolloutTableException failure(String what, AzureException e) {
        return new RolloutTableException.StorageAccess(tableUri, what, e);
    }

    private static String trimSlash(String s) {
        return s.endsWith("/") ? s.substring(0, s.length() - 1) : s;
    }

    @Override
    public void close() {
        // The SDK's clients hold no resources of their own beyond the shared JDK HTTP client.
    }
}
