package dev.rolloutingest.testsupport;

import dev.rolloutingest.table.TableLocation;
import java.io.IOException;
import java.io.Writer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;

/**
 * An app's settings for a test run, from a {@link TestCluster}: the brokers, the registry and an HTTP port of the
 * system's choosing, then what the test says (table, state folder, topics, any setting). The result is a fresh map
 * for {@code IngestConfig.of}/{@code MergeConfig.of}, or a properties file for an app in its own JVM.
 */
public final class AppSettings {
    private final Map<String, Object> values = new HashMap<>();

    private AppSettings() {}

    public static AppSettings of(TestCluster cluster) {
        AppSettings settings = new AppSettings();
        settings.values.put("bootstrap.servers", cluster.bootstrapServers());
        settings.values.put("schema.registry.url", cluster.registryUrl());
        settings.values.put("http.port", "0");
        return settings;
    }

    /** The table at a local path. */
    public AppSettings table(Path dir) {
        return table(TableLocation.local(dir));
    }

    /** The table at a location, its storage options as {@code rollout.table.storage.*} settings. */
    public AppSettings table(TableLocation location) {
        values.put("rollout.table.uri", location.uri());
        location.storageOptions().forEach((k, v) -> values.put("rollout.table.storage." + k, v));
        return this;
    }

    public AppSettings state(Path dir) {
        values.put("rollout.state.dir", dir.toString());
        return this;
    }

    /**
     * A run's own identity and topics: {@code application.id} = {@code run}, input {@code input}, and {@code
     * <run>-generations}, {@code <run>-merges}, {@code <run>-dlq} (as {@link TestCluster#createRunTopics} makes them).
     */
    public AppSettings topicsOf(String run, String input) {
        values.put("application.id", run);
        values.put("rollout.input.topic", input);
        values.put("rollout.generations.topic", run + "-generations");
        values.put("rollout.merges.topic", run + "-merges");
        values.put("rollout.dlq.topic", run + "-dlq");
        values.put("rollout.snapshot.topic", input);
        return this;
    }

    public AppSettings with(String key, Object value) {
        values.put(key, value);
        return this;
    }

    public AppSettings with(Map<String, ?> more) {
        values.putAll(more);
        return this;
    }

    /** A copy of the settings: the test may change it. */
    public Map<String, Object> map() {
        return new HashMap<>(values);
    }

    /** The settings as a properties file (for an app in its own JVM); returns its path. */
    public Path writeTo(Path file) throws IOException {
        Files.createDirectories(file.getParent());
        Properties props = new Properties();
        values.forEach((k, v) -> props.put(k, String.valueOf(v)));
        try (Writer out = Files.newBufferedWriter(file)) {
            props.store(out, null);
        }
        return file;
    }
}
