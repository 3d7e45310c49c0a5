package dev.rolloutingest.runtime;

import static dev.rolloutingest.runtime.CommonKeys.APPLICATION_ID;
import static dev.rolloutingest.runtime.CommonKeys.BOOTSTRAP_SERVERS;
import static dev.rolloutingest.runtime.CommonKeys.HEALTH_MAX_THREAD_REPLACEMENTS;
import static dev.rolloutingest.runtime.CommonKeys.HEALTH_THREAD_REPLACEMENT_WINDOW_MS;
import static dev.rolloutingest.runtime.CommonKeys.HTTP_HOST;
import static dev.rolloutingest.runtime.CommonKeys.HTTP_PORT;
import static dev.rolloutingest.runtime.CommonKeys.LAG_PUBLISH_INTERVAL_MS;
import static dev.rolloutingest.runtime.CommonKeys.TABLE_URI;

import dev.rolloutingest.serde.SerdeConfig;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.merge.MergeMemory;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.common.config.AbstractConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;

/**
 * What both apps' settings share: the values resolved from file, env and defaults, the checks every app makes
 * at start (registry settings, table location), and the getters of {@link CommonKeys}. Each app's config
 * declares and reads only its own keys.
 */
public abstract class AppConfig {
    protected final AbstractConfig parsed;
    protected final Map<String, Object> raw;
    private final TableLocation tableLocation;
    private final HttpAccess httpAccess;

    protected AppConfig(ConfigDef definition, Map<String, Object> raw) {
        this.raw = raw;
        this.parsed = new AbstractConfig(definition, raw, false);
        SerdeConfig.from(raw); // registry settings fail here, naming their key
        this.httpAccess = HttpAccess.from(parsed);
        httpAccess.requireAllowedOn(parsed.getString(HTTP_HOST));
        try {
            this.tableLocation = new TableLocation(
                    parsed.getString(TABLE_URI), ConfigSources.withPrefix(raw, ConfigSources.STORAGE_PREFIX));
        } catch (IllegalArgumentException e) {
            throw new ConfigException(TABLE_URI, parsed.getString(TABLE_URI), e.getMessage());
        }
    }

    /** Refuses, naming the key, a byte budget one merge commit could not hold (see {@link MergeMemory}). */
    protected final void requireWithinMergeMemory(String key) {
        String refusal = MergeMemory.refusal(parsed.getLong(key));
        if (refusal != null) {
            throw new ConfigException(key, parsed.getLong(key), refusal);
        }
    }

    public TableLocation tableLocation() {
        return tableLocation;
    }

    /** Read and merge limits of the table (pending warn/cap, read refresh, read caches). */
    public TableSettings tableSettings() {
        return CommonKeys.tableSettings(parsed);
    }

    public String bootstrapServers() {
        return parsed.getString(BOOTSTRAP_SERVERS);
    }

    public String applicationId() {
        return parsed.getString(APPLICATION_ID);
    }

    /** Settings for this app's admin clients and extra consumers: brokers and security. */
    public Map<String, Object> clientConfig() {
        return ConfigSources.clientConfig(bootstrapServers(), raw);
    }

    /** Registry settings, under Confluent's names, for the serde. */
    public Map<String, Object> serdeConfig() {
        return ConfigSources.serdeSettings(raw);
    }

    /** Streams settings: see {@link ConfigSources#streamsProperties}. */
    public Properties streamsProperties() {
        return ConfigSources.streamsProperties(parsed, raw);
    }

    public String httpHost() {
        return parsed.getString(HTTP_HOST);
    }

    public int httpPort() {
        return parsed.getInt(HTTP_PORT);
    }

    /** Who may call which HTTP route (tokens, TLS). */
    public HttpAccess httpAccess() {
        return httpAccess;
    }

    public int healthMaxThreadReplacements() {
        return parsed.getInt(HEALTH_MAX_THREAD_REPLACEMENTS);
    }

    public long healthThreadReplacementWindowMs() {
        return parsed.getLong(HEALTH_THREAD_REPLACEMENT_WINDOW_MS);
    }

    public long lagPublishIntervalMs() {
        return parsed.getLong(LAG_PUBLISH_INTERVAL_MS);
    }
}
