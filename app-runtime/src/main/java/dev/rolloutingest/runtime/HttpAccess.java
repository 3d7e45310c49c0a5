package dev.rolloutingest.runtime;

import static org.apache.kafka.common.config.ConfigDef.Importance.HIGH;
import static org.apache.kafka.common.config.ConfigDef.Importance.MEDIUM;
import static org.apache.kafka.common.config.ConfigDef.Type.BOOLEAN;
import static org.apache.kafka.common.config.ConfigDef.Type.PASSWORD;
import static org.apache.kafka.common.config.ConfigDef.Type.STRING;

import com.sun.net.httpserver.HttpExchange;
import java.io.IOException;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import javax.net.ssl.SSLContext;
import org.apache.kafka.common.config.AbstractConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.config.types.Password;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Who may call which route of an {@link HttpEndpoint}: bearer tokens, each with a role ({@code read} or
 * {@code admin}, which includes read), from a setting and/or a file that is re-read when it changes (so a token
 * is rotated without a restart), and TLS from a keystore. An endpoint bound beyond loopback without tokens is
 * refused at start unless {@value #ALLOW_UNAUTHENTICATED} says so. Only the tokens' SHA-256 digests are kept.
 */
public final class HttpAccess {
    private static final Logger log = LoggerFactory.getLogger(HttpAccess.class);

    public static final String TOKENS = "http.auth.tokens";
    public static final String TOKENS_FILE = "http.auth.tokens.file";
    public static final String PROTECT_METRICS = "http.auth.metrics";
    public static final String ALLOW_UNAUTHENTICATED = "http.allow.unauthenticated";
    public static final String KEYSTORE_PATH = "http.tls.keystore.path";
    public static final String KEYSTORE_PASSWORD = "http.tls.keystore.password";
    public static final String KEYSTORE_TYPE = "http.tls.keystore.type";

    /** What a route asks of its caller. */
    public enum Access {
        /** Anyone (/health: probes carry no tokens). */
        PUBLIC,
        /** Anyone, or the read role when {@value #PROTECT_METRICS} is on. */
        METRICS,
        /** The read role. */
        READ,
        /** GET and HEAD need the read role, every other method the admin role. */
        READ_OR_ADMIN_TO_CHANGE,
        /** The admin role. */
        ADMIN
    }

    /** A token's holder and what it may do. */
    public enum Role {
        READ,
        ADMIN;

        boolean allows(Role needed) {
            return this == ADMIN || needed == READ;
        }
    }

    /** Everyone may call everything: loopback-only endpoints of tests and the embedded demo. */
    public static final HttpAccess OPEN = new HttpAccess(BearerTokens.NONE, false, false, null);

    private final BearerTokens tokens;
    private final boolean protectMetrics;
    private final boolean allowUnauthenticated;
    private final TlsKey tls;

    private HttpAccess(BearerTokens tokens, boolean protectMetrics, boolean allowUnauthenticated, TlsKey tls) {
        this.tokens = tokens;
        this.protectMetrics = protectMetrics;
        this.allowUnauthenticated = allowUnauthenticated;
        this.tls = tls;
    }

    /** Adds the access keys to an app's settings. */
    public static ConfigDef define(ConfigDef def) {
        return def.define(
                        TOKENS,
                        PASSWORD,
                        "",
                        HIGH,
                        "Bearer tokens of the HTTP APIs, comma separated, each name:role:token (role read or admin;"
                                + " admin includes read). Empty with no " + TOKENS_FILE + " = no authentication")
                .define(
                        TOKENS_FILE,
                        STRING,
                        "",
                        HIGH,
                        "A file of bearer tokens, one 'name role token' a line (# comments): re-read within a second"
                                + " of a change, so a token is rotated without a restart")
                .define(
                        PROTECT_METRICS,
                        BOOLEAN,
                        false,
                        MEDIUM,
                        "/metrics needs a read token too (Prometheus: authorization.credentials_file); /health is"
                                + " always open for probes")
                .define(
                        ALLOW_UNAUTHENTICATED,
                        BOOLEAN,
                        false,
                        HIGH,
                        "Serve the read and admin APIs without tokens on an address other than loopback (refused at"
                                + " start otherwise): anyone who reaches the port could force merges, snapshot and"
                                + " delete")
                .define(
                        KEYSTORE_PATH,
                        STRING,
                        "",
                        MEDIUM,
                        "A keystore with the HTTP endpoint's key and certificate: serve HTTPS (empty = plain HTTP)")
                .define(KEYSTORE_PASSWORD, PASSWORD, "", MEDIUM, "The keystore's password (also its key's)")
                .define(KEYSTORE_TYPE, STRING, "PKCS12", MEDIUM, "The keystore's type (PKCS12, JKS)");
    }

    /**
     * The access an endpoint on {@code host} gets from these settings; malformed tokens, an unreadable keystore
     * or a non-loopback address without tokens fail here, naming the key.
     */
    public static HttpAccess from(AbstractConfig config) {
        String file = config.getString(TOKENS_FILE);
        BearerTokens tokens =
                BearerTokens.of(config.getPassword(TOKENS).value(), file.isBlank() ? null : Path.of(file));
        TlsKey tls = tlsKey(
                config.getString(KEYSTORE_PATH),
                config.getPassword(KEYSTORE_PASSWORD),
                config.getString(KEYSTORE_TYPE));
        HttpAccess access = new HttpAccess(
                tokens, config.getBoolean(PROTECT_METRICS), config.getBoolean(ALLOW_UNAUTHENTICATED), tls);
        if (access.protectMetrics && !access.authenticates()) {
            throw new ConfigException(PROTECT_METRICS, true, "needs tokens (" + TOKENS + " or " + TOKENS_FILE + ")");
        }
        return access;
    }

    /** The access set by the env vars of these keys ({@code HTTP_AUTH_TOKENS_FILE} ...): for the CLI's serve. */
    public static HttpAccess fromEnv(Map<String, String> env) {
        ConfigDef def = define(new ConfigDef());
        return from(new AbstractConfig(def, ConfigSources.resolve(def, new java.util.Properties(), env), false));
    }

    /** Refuses, naming the key, serving without tokens beyond loopback unless that is explicitly allowed. */
    public void requireAllowedOn(String host) {
        if (!authenticates() && !allowUnauthenticated && !loopback(host)) {
            throw new ConfigException(
                    TOKENS,
                    "(none)",
                    "the HTTP endpoint binds " + host + ", beyond loopback, and no bearer tokens are set ("
                            + TOKENS + " or " + TOKENS_FILE + "); set some, bind 127.0.0.1, or set "
                            + ALLOW_UNAUTHENTICATED + "=true to serve without authentication");
        }
    }

    /** Whether any route asks for a token. */
    public boolean authenticates() {
        return tokens.any();
    }

    /** Whether the endpoints serve TLS ({@value #KEYSTORE_PATH} is set). */
    public boolean servesTls() {
        return tls != null;
    }

    Optional<SSLContext> tls() {
        return tlsKey().map(TlsKey::context);
    }

    /** The key and certificate the endpoints serve TLS with, when {@value #KEYSTORE_PATH} is set. */
    public Optional<TlsKey> tlsKey() {
        return Optional.ofNullable(tls);
    }

    /** Why a call may not go on: 401 no or an unknown token, 403 a token without the role. */
    public record Refusal(int status, String message, String challenge) {}

    /**
     * Why a call with this {@code Authorization} header value (null when absent) may not go on, if so: the same
     * tokens and roles for every endpoint that serves the table (HTTP, Arrow Flight).
     *
     * @param method the HTTP method, which decides the role of {@link Access#READ_OR_ADMIN_TO_CHANGE} ("GET" for reads)
     */
    public Optional<Refusal> refusal(String authorization, Access access, String method) {
        Role needed = needed(access, method);
        if (needed == null || !authenticates()) {
            return Optional.empty();
        }
        if (authorization == null || !authorization.regionMatches(true, 0, "Bearer ", 0, 7)) {
            return Optional.of(new Refusal(401, "a bearer token is required", "Bearer realm=\"rollout-ingest\""));
        }
        BearerTokens.Holder holder = tokens.holderOf(authorization.substring(7).trim());
        if (holder == null) {
            return Optional.of(new Refusal(
                    401, "the bearer token is not valid", "Bearer realm=\"rollout-ingest\", error=\"invalid_token\""));
        }
        if (!holder.role().allows(needed)) {
            return Optional.of(new Refusal(
                    403,
                    "token '" + holder.name() + "' has the " + name(holder.role()) + " role; this needs "
                            + name(needed),
                    null));
        }
        return Optional.empty();
    }

    /** Why this request may not go on (401: no or an unknown token; 403: a token without the role), if so. */
    Optional<HttpEndpoint.Response> refusal(HttpExchange exchange, Access access) {
        return refusal(exchange.getRequestHeaders().getFirst("Authorization"), access, exchange.getRequestMethod())
                .map(refused -> {
                    if (refused.challenge() != null) {
                        exchange.getResponseHeaders().set("WWW-Authenticate", refused.challenge());
                    }
                    return HttpEndpoint.Response.error(refused.status(), refused.message());
                });
    }

    private Role needed(Access access, String method) {
        return switch (access) {
            case PUBLIC -> null;
            case METRICS -> protectMetrics ? Role.READ : null;
            case READ -> Role.READ;
            case ADMIN -> Role.ADMIN;
            case READ_OR_ADMIN_TO_CHANGE -> "GET".equals(method) || "HEAD".equals(method) ? Role.READ : Role.ADMIN;
        };
    }

    private static TlsKey tlsKey(String path, Password password, String type) {
        if (path.isBlank()) {
            return null;
        }
        try {
            return TlsKey.load(Path.of(path), password.value().toCharArray(), type);
        } catch (IOException | GeneralSecurityException e) {
            throw new ConfigException(KEYSTORE_PATH, path, "cannot be loaded as " + type + ": " + e.getMessage());
        }
    }

    static boolean loopback(String host) {
        try {
            return List.of(InetAddress.getAllByName(host)).stream().allMatch(InetAddress::isLoopbackAddress);
        } catch (UnknownHostException e) {
            return false;
        }
    }

    private static String name(Role role) {
        return role.name().toLowerCase(Locale.ROOT);
    }
}
