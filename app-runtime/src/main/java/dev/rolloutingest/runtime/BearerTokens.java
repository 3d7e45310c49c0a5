package dev.rolloutingest.runtime;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Locale;
import java.util.Map;
import org.apache.kafka.common.config.ConfigException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The bearer tokens an endpoint accepts, each with its holder's name and role: from a setting
 * ({@code name:role:token,...}) and/or a file ({@code name role token} a line) re-read within a second of a
 * change. Only SHA-256 digests are kept; a file that cannot be parsed keeps the tokens read before.
 */
final class BearerTokens {
    private static final Logger log = LoggerFactory.getLogger(BearerTokens.class);

    /** How often at most the tokens file is checked for a change. */
    private static final long TOKENS_FILE_CHECK_MS = 1_000;

    /** No tokens: nothing is asked of callers. */
    static final BearerTokens NONE = new BearerTokens(Map.of(), null);

    /** A token's holder and what it may do. */
    record Holder(String name, HttpAccess.Role role) {}

    private record TokensFile(FileTime modified, long size, Map<String, Holder> tokens) {}

    private final Map<String, Holder> configuredTokens;
    private final Path tokensFile;
    private volatile TokensFile fileTokens;
    private volatile long fileCheckedAtMs;

    private BearerTokens(Map<String, Holder> configuredTokens, Path tokensFile) {
        this.configuredTokens = configuredTokens;
        this.tokensFile = tokensFile;
        if (tokensFile != null) {
            this.fileTokens = readTokensFile(tokensFile);
            this.fileCheckedAtMs = System.currentTimeMillis();
        }
    }

    /** The tokens of the setting and of the file (null: none); malformed ones fail naming their key. */
    static BearerTokens of(String configured, Path file) {
        return new BearerTokens(parseTokens(HttpAccess.TOKENS, configured), file);
    }

    /** Whether any token is set (then every protected route asks for one). */
    boolean any() {
        return !configuredTokens.isEmpty() || tokensFile != null;
    }

    /** Who holds this token, or null: every entry compared in constant time. */
    Holder holderOf(String token) {
        String digest = digest(token);
        Holder holder = null;
        // Every entry is compared, in constant time, so the answer's timing says nothing about a near miss.
        for (Map.Entry<String, Holder> entry : currentTokens().entrySet()) {
            if (MessageDigest.isEqual(
                    entry.getKey().getBytes(StandardCharsets.US_ASCII), digest.getBytes(StandardCharsets.US_ASCII))) {
                holder = entry.getValue();
            }
        }
        return holder;
    }

    private Map<String, Holder> currentTokens() {
        if (tokensFile == null) {
            return configuredTokens;
        }
        long now = System.currentTimeMillis();
        if (now - fileCheckedAtMs >= TOKENS_FILE_CHECK_MS) {
            fileCheckedAtMs = now;
            reloadIfChanged();
        }
        return fileTokens.tokens();
    }

    private synchronized void reloadIfChanged() {
        try {
            FileTime modified = Files.getLastModifiedTime(tokensFile);
            long size = Files.size(tokensFile);
            if (modified.equals(fileTokens.modified()) && size == fileTokens.size()) {
                return;
            }
            fileTokens = readTokensFile(tokensFile);
            log.info(
                    "HTTP tokens re-read from {}: {} tokens",
                    tokensFile,
                    fileTokens.tokens().size());
        } catch (IOException | ConfigException e) {
            // Keeping the tokens that worked beats locking every caller out over a half-written file.
            log.error(
                    "HTTP tokens file {} could not be re-read; the previous tokens stay: {}",
                    tokensFile,
                    e.getMessage());
        }
    }

    /** The file's tokens with the setting's over them, merged once per read of the file, not per request. */
    private TokensFile readTokensFile(Path file) {
        try {
            FileTime modified = Files.getLastModifiedTime(file);
            long size = Files.size(file);
            StringBuilder entries = new StringBuilder();
            for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
                String trimmed = line.strip();
                if (trimmed.isEmpty() || trimmed.startsWith("#")) {
                    continue;
                }
                String[] parts = trimmed.split("\\s+");
                if (parts.length != 3) {
                    throw new ConfigException(
                            HttpAccess.TOKENS_FILE,
                            file.toString(),
                            "each line is 'name role token' (a line has " + parts.length + " fields)");
                }
                entries.append(entries.isEmpty() ? "" : ",")
                        .append(parts[0])
                        .append(':')
                        .append(parts[1])
                        .append(':')
                        .append(parts[2]);
            }
            Map<String, Holder> tokens = parseTokens(HttpAccess.TOKENS_FILE, entries.toString());
            tokens.putAll(configuredTokens);
            return new TokensFile(modified, size, tokens);
        } catch (IOException e) {
            throw new ConfigException(HttpAccess.TOKENS_FILE, file.toString(), "cannot be read: " + e.getMessage());
        }
    }

    /** name:role:token entries by the token's digest (only digests stay in memory). */
    private static Map<String, Holder> parseTokens(String key, String value) {
        Map<String, Holder> tokens = new HashMap<>();
        if (value == null || value.isBlank()) {
            return tokens;
        }
        for (String entry : value.split(",")) {
            String[] parts = entry.strip().split(":", 3);
            if (parts.length != 3 || parts[0].isBlank() || parts[2].isBlank()) {
                // the value is never echoed: it holds secrets
                throw new ConfigException(key, "(hidden)", "each token is name:role:token with a name and a token");
            }
            HttpAccess.Role role;
            try {
                role = HttpAccess.Role.valueOf(parts[1].strip().toUpperCase(Locale.ROOT));
            } catch (IllegalArgumentException e) {
                throw new ConfigException(
                        key,
                        "(hidden)",
                        "token '" + parts[0].strip() + "' has role '" + parts[1].strip() + "'; roles are read, admin");
            }
            if (parts[2].strip().length() < 16) {
                throw new ConfigException(
                        key, "(hidden)", "token '" + parts[0].strip() + "' is shorter than 16 characters");
            }
            if (tokens.put(digest(parts[2].strip()), new Holder(parts[0].strip(), role)) != null) {
                throw new ConfigException(key, "(hidden)", "token '" + parts[0].strip() + "' repeats another token");
            }
        }
        return tokens;
    }

    private static String digest(String token) {
        try {
            return HexFormat.of()
                    .formatHex(MessageDigest.getInstance("SHA-256").digest(token.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
