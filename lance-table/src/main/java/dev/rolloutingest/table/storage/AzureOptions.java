package dev.rolloutingest.table.storage;

import dev.rolloutingest.table.TableLocation;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * What Lance's Azure storage options (and the {@code AZURE_*} env vars Lance also reads) say about a table's
 * container: its account, blob endpoint and credential, so the client of the files Lance's Java API cannot write
 * reaches the same place with the same identity. Option names and their aliases are lance-core's (object_store's);
 * the credential is chosen in the order it chooses one: a bearer token, an account key, a service principal, a SAS
 * token, else the default Azure credential chain (workload identity, managed identity, Azure CLI, ...).
 *
 * @param endpoint the blob service URL, account included ({@code https://acct.blob.core.windows.net} or an
 *     emulator's {@code http://127.0.0.1:10000/devstoreaccount1})
 * @param prefix the table's folder in the container, without slashes at either end ("" for the container's root)
 */
public record AzureOptions(String account, String endpoint, String container, String prefix, Credential credential) {
    /** Azurite's well-known account and key (public, documented by Microsoft): what Lance uses on the emulator. */
    static final String EMULATOR_ACCOUNT = "devstoreaccount1";

    static final String EMULATOR_KEY =
            "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

    static final List<String> ACCOUNT_NAME = List.of("azure_storage_account_name", "account_name");
    static final List<String> ACCOUNT_KEY = List.of(
            "azure_storage_account_key",
            "azure_storage_access_key",
            "azure_storage_master_key",
            "account_key",
            "access_key",
            "master_key");
    static final List<String> SAS = List.of("azure_storage_sas_key", "azure_storage_sas_token", "sas_key", "sas_token");
    static final List<String> TOKEN = List.of("azure_storage_token", "bearer_token", "token");
    static final List<String> ENDPOINT = List.of("azure_storage_endpoint", "azure_endpoint", "endpoint");
    static final List<String> USE_EMULATOR = List.of("azure_storage_use_emulator", "use_emulator");
    static final List<String> CLIENT_ID = List.of("azure_storage_client_id", "azure_client_id", "client_id");
    static final List<String> CLIENT_SECRET =
            List.of("azure_storage_client_secret", "azure_client_secret", "client_secret");
    static final List<String> TENANT_ID = List.of(
            "azure_storage_tenant_id",
            "azure_storage_authority_id",
            "azure_tenant_id",
            "azure_authority_id",
            "tenant_id",
            "authority_id");
    static final List<String> AUTHORITY_HOST = List.of("azure_storage_authority_host", "azure_authority_host");
    static final List<String> FEDERATED_TOKEN_FILE = List.of("azure_federated_token_file", "federated_token_file");

    /** How requests to the container are authorised. Every value is a secret: none is ever printed. */
    public sealed interface Credential {}

    public record AccountKey(String key) implements Credential {
        @Override
        public String toString() {
            return "AccountKey[***]";
        }
    }

    /** A shared access signature, as a query string without the leading '?'. */
    public record SasToken(String token) implements Credential {
        @Override
        public String toString() {
            return "SasToken[***]";
        }
    }

    public record BearerToken(String token) implements Credential {
        @Override
        public String toString() {
            return "BearerToken[***]";
        }
    }

    /**
     * The default Azure credential chain (env, workload identity, managed identity, Azure CLI), given the Entra ID
     * settings the storage options hold (each null where they hold none): a client id and secret with a tenant make
     * it a service principal, a client id picks a user-assigned managed identity.
     */
    public record EntraId(
            String tenantId, String clientId, String clientSecret, String federatedTokenFile, String authorityHost)
            implements Credential {
        @Override
        public String toString() {
            return "EntraId[tenant=" + tenantId + ", client=" + clientId + (clientSecret == null ? "" : ", secret=***")
                    + "]";
        }
    }

    /** The options of an {@code az://} or {@code abfss://} location; {@code env} fills options the location lacks. */
    public static AzureOptions of(TableLocation location, Map<String, String> env) {
        return of(location.uri(), location.storageOptions(), env);
    }

    /** The same for a URI and options not yet made a location (a location checks them as it is made). */
    public static AzureOptions of(String uri, Map<String, String> options, Map<String, String> env) {
        int schemeEnd = uri.indexOf("://");
        String rest = uri.substring(schemeEnd + 3);
        int slash = rest.indexOf('/');
        String authority = slash < 0 ? rest : rest.substring(0, slash);
        String prefix = slash < 0 ? "" : trimSlashes(rest.substring(slash + 1));
        int at = authority.indexOf('@');
        String container = at < 0 ? authority : authority.substring(0, at);
        String host = at < 0 ? null : authority.substring(at + 1);
        if (container.isEmpty()) {
            throw new IllegalArgumentException("table URI " + uri + " names no container");
        }
        boolean emulator = "true".equalsIgnoreCase(first(options, env, USE_EMULATOR));
        String account = host != null ? host.split("\\.", 2)[0] : first(options, env, ACCOUNT_NAME);
        if (account == null && emulator) {
            account = EMULATOR_ACCOUNT;
        }
        if (account == null || account.isBlank()) {
            throw new IllegalArgumentException("table URI " + uri + " names no storage account: set the storage option"
                    + " azure_storage_account_name (or env AZURE_STORAGE_ACCOUNT_NAME), or write the URI as"
                    + " abfss://" + container + "@ACCOUNT.dfs.core.windows.net/" + prefix);
        }
        return new AzureOptions(
                account,
                endpoint(options, env, account, host, emulator),
                container,
                prefix,
                credential(options, env, emulator));
    }

    private static String endpoint(
            Map<String, String> options, Map<String, String> env, String account, String host, boolean emulator) {
        if (emulator) {
            // As lance-core: the emulator's address comes from AZURITE_BLOB_STORAGE_URL, never from azure_endpoint.
            String azurite = env.getOrDefault("AZURITE_BLOB_STORAGE_URL", "http://127.0.0.1:10000");
            return trimTrailingSlash(azurite) + "/" + account;
        }
        String configured = first(options, env, ENDPOINT);
        if (configured != null) {
            return trimTrailingSlash(configured);
        }
        if (host != null && host.contains(".")) {
            // ADLS Gen2 names the account's DFS host; its files are blobs of the same account's blob service.
            return "https://" + host.replace(".dfs.", ".blob.");
        }
        return "https://" + account + ".blob.core.windows.net";
    }

    private static Credential credential(Map<String, String> options, Map<String, String> env, boolean emulator) {
        String token = first(options, env, TOKEN);
        String key = first(options, env, ACCOUNT_KEY);
        String sas = first(options, env, SAS);
        EntraId entra = new EntraId(
                first(options, env, TENANT_ID),
                first(options, env, CLIENT_ID),
                first(options, env, CLIENT_SECRET),
                first(options, env, FEDERATED_TOKEN_FILE),
                first(options, env, AUTHORITY_HOST));
        if (token != null) {
            return new BearerToken(token);
        }
        if (key != null) {
            return new AccountKey(key);
        }
        if (entra.clientSecret() != null && entra.clientId() != null && entra.tenantId() != null) {
            return entra;
        }
        if (sas != null) {
            return new SasToken(sas.startsWith("?") ? sas.substring(1) : sas);
        }
        return emulator ? new AccountKey(EMULATOR_KEY) : entra;
    }

    /**
     * The value of the first of {@code names} the options hold, else of the first whose upper-cased name is an env
     * var (Lance reads {@code AZURE_STORAGE_ACCOUNT_NAME} and the like from its environment too); null when none is.
     */
    private static String first(Map<String, String> options, Map<String, String> env, List<String> names) {
        for (String name : names) {
            String value = options.get(name);
            if (value != null && !value.isBlank()) {
                return value.trim();
            }
        }
        for (String name : names) {
            String value = env.get(name.toUpperCase(Locale.ROOT));
            if (value != null && !value.isBlank() && name.startsWith("azure")) {
                return value.trim();
            }
        }
        return null;
    }

    private static String trimSlashes(String path) {
        String trimmed = path;
        while (trimmed.startsWith("/")) {
            trimmed = trimmed.substring(1);
        }
        return trimTrailingSlash(trimmed);
    }

    private static String trimTrailingSlash(String s) {
        String trimmed = s;
        while (trimmed.endsWith("/")) {
            trimmed = trimmed.substring(0, trimmed.length() - 1);
        }
        return trimmed;
    }

    @Override
    public String toString() {
        return "AzureOptions[" + endpoint + "/" + container + "/" + prefix + ", " + credential + "]";
    }
}
