package dev.rolloutingest.runtime;

import static dev.rolloutingest.runtime.CommonKeys.APPLICATION_ID;
import static dev.rolloutingest.runtime.CommonKeys.BOOTSTRAP_SERVERS;
import static dev.rolloutingest.runtime.CommonKeys.HEALTH_MAX_THREAD_REPLACEMENTS;
import static dev.rolloutingest.runtime.CommonKeys.HEALTH_THREAD_REPLACEMENT_WINDOW_MS;
import static dev.rolloutingest.runtime.CommonKeys.HTTP_HOST;
import static dev.rolloutingest.runtime.CommonKeys.HTTP_PORT;
import static dev.rolloutingest.runtime.CommonKeys.LAG_PUBLISH_INTERVAL_MS;
import static dev.rolloutingest.runtime.CommonKeys.TABLES_MAX;
import static dev.rolloutingest.runtime.CommonKeys.TABLES_ROOT;
import static dev.rolloutingest.runtime.CommonKeys.TABLE_URI;

import dev.rolloutingest.serde.SerdeConfig;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.catalog.TableCatalog;
import dev.rolloutingest.table.merge.MergeMemory;
import io.micrometer.core.instrument.MeterRegistry;
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
    /** The one table's location, or the root of the catalog when {@link #manyTables}. */
    private final TableLocation tableLocation;

    private final boolean manyTables;
    private final HttpAccess httpAccess;
    private final HttpLimits httpLimits;

    protected AppConfig(ConfigDef definition, Map<String, Object> raw) {
        this.raw = raw;
        this.parsed = new AbstractConfig(definition, raw, false);
        SerdeConfig.from(raw); // registry settings fail here, naming their key
        this.httpAccess = HttpAccess.from(parsed);
        httpAccess.requireAllowedOn(parsed.getString(HTTP_HOST));
        this.httpLimits = HttpLimits.from(parsed);
        String uri = parsed.getString(TABLE_URI).trim();
        String root = parsed.getString(TABLES_ROOT).trim();
        if (uri.isEmpty() == root.isEmpty()) {
            throw new ConfigException(
                    uri.isEmpty() ? TABLE_URI : TABLES_ROOT,
                    uri.isEmpty() ? "" : root,
                    "set exactly one of " + TABLE_URI + " (one table) and " + TABLES_ROOT
                            + " (many tables under a root)");
        }
        String key = uri.isEmpty() ? TABLES_ROOT : TABLE_URI;
        try {
            this.tableLocation = new TableLocation(
                    uri.isEmpty() ? root : uri, ConfigSources.withPrefix(raw, ConfigSources.STORAGE_PREFIX));
        } catch (IllegalArgumentException e) {
            throw new ConfigException(key, parsed.getString(key), e.getMessage());
        }
        this.manyTables = !root.isEmpty();
    }

    /** Whether this deployment serves many tables under {@link #tableLocation} (a root), not one table there. */
    public boolean manyTables() {
        return manyTables;
    }

    public int tablesMax() {
        return parsed.getInt(TABLES_MAX);
    }

    /** The tag of the per-table series, capped by {@link CommonKeys#METRICS_TABLES_MAX}. */
    public TableSeries tableSeries() {
        return new TableSeries(parsed.getInt(CommonKeys.METRICS_TABLES_MAX));
    }

    /** The tables this deployment serves: the one table (created when absent) or the catalog under the root. */
    public TableCatalog openTables(MeterRegistry meters) {
        if (manyTables) {
            return TableCatalog.under(tableLocation, tableSettings(), meters, tablesMax());
        }
        return TableCatalog.single(RolloutTable.createOrOpen(tableLocation, tableSettings(), meters));
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

    public HttpLimits httpLimits() {
        return httpLimits;
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
