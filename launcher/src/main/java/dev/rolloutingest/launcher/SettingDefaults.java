package dev.rolloutingest.launcher;

import dev.rolloutingest.ingest.IngestConfig;
import dev.rolloutingest.merge.MergeConfig;
import dev.rolloutingest.runtime.ConfigSources;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import org.apache.kafka.common.config.ConfigDef;
import picocli.CommandLine;
import picocli.CommandLine.Model.ArgSpec;
import picocli.CommandLine.Model.OptionSpec;

/**
 * The CLI's defaults for options that stand for a setting of the apps: an option names its setting's key as its
 * {@code descriptionKey}, and its default is the setting's env var when set, else the setting's declared default.
 * So an option never copies a setting's name or default; {@code SettingDefaultsTest} holds every option to it.
 */
final class SettingDefaults implements CommandLine.IDefaultValueProvider {
    /** Every setting of both apps, by key. */
    static final Map<String, ConfigDef.ConfigKey> SETTINGS = settings();

    private final Map<String, String> env;

    SettingDefaults(Map<String, String> env) {
        this.env = env;
    }

    private static Map<String, ConfigDef.ConfigKey> settings() {
        Map<String, ConfigDef.ConfigKey> all = new LinkedHashMap<>(IngestConfig.DEFINITION.configKeys());
        all.putAll(MergeConfig.DEFINITION.configKeys());
        return all;
    }

    /** The input topic's declared default (what a read API counts cursor offsets of when told no topic). */
    static String inputTopic() {
        return (String) SETTINGS.get(IngestConfig.INPUT_TOPIC).defaultValue;
    }

    /** The setting an option stands for, if it names one. */
    static Optional<ConfigDef.ConfigKey> settingOf(ArgSpec arg) {
        if (!(arg instanceof OptionSpec option) || option.descriptionKey() == null) {
            return Optional.empty();
        }
        return Optional.ofNullable(SETTINGS.get(option.descriptionKey()));
    }

    @Override
    public String defaultValue(ArgSpec arg) {
        return settingOf(arg)
                .map(key -> {
                    String fromEnv = env.get(ConfigSources.envName(key.name));
                    if (fromEnv != null) {
                        return fromEnv;
                    }
                    return key.hasDefault() && key.defaultValue != null ? String.valueOf(key.defaultValue) : null;
                })
                .orElse(null);
    }
}
