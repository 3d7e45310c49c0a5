package dev.rolloutingest.serde.values;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;

/**
 * Which {@link ValueFormat} each input topic's values are read as: the first override whose pattern matches the
 * whole topic name, else the default. Looked up once per topic name (a bounded cache), so a record pays a map read.
 */
public final class ValueFormats {
    /** The format of every input topic no override names. */
    public static final String FORMAT = "rollout.value.format";
    /** Overrides per topic: {@code <topic-regex>=<format>,...}, the first match wins. */
    public static final String FORMATS = "rollout.value.formats";

    private static final int CACHED_TOPICS = 10_000;

    private record Override(Pattern topics, ValueFormat format) {}

    private final ValueFormat defaultFormat;
    private final List<Override> overrides;
    private final Map<String, ValueFormat> byTopic = new ConcurrentHashMap<>();

    private ValueFormats(ValueFormat defaultFormat, List<Override> overrides) {
        this.defaultFormat = defaultFormat;
        this.overrides = overrides;
    }

    /** Every topic in one format. */
    public static ValueFormats all(ValueFormat format) {
        return new ValueFormats(format, List.of());
    }

    /** From the two settings' values; a ConfigException naming the key for a bad one. */
    public static ValueFormats of(String defaultFormat, String overrides) {
        ValueFormat format;
        try {
            format = ValueFormat.of(defaultFormat);
        } catch (IllegalArgumentException e) {
            throw new ConfigException(FORMAT, defaultFormat, e.getMessage());
        }
        return new ValueFormats(format, overrides(overrides));
    }

    private static List<Override> overrides(String text) {
        List<Override> list = new ArrayList<>();
        if (text == null || text.isBlank()) {
            return list;
        }
        for (String entry : text.split(",")) {
            int eq = entry.lastIndexOf('=');
            if (eq <= 0) {
                throw new ConfigException(
                        FORMATS, text, "'" + entry.trim() + "' is not <topic-regex>=<format> (entries separated by ,)");
            }
            String regex = entry.substring(0, eq).trim();
            try {
                list.add(new Override(Pattern.compile(regex), ValueFormat.of(entry.substring(eq + 1))));
            } catch (PatternSyntaxException e) {
                throw new ConfigException(
                        FORMATS, text, "'" + regex + "' is not a regular expression: " + e.getDescription());
            } catch (IllegalArgumentException e) {
                throw new ConfigException(FORMATS, text, "in '" + entry.trim() + "': " + e.getMessage());
            }
        }
        return List.copyOf(list);
    }

    public ValueFormat forTopic(String topic) {
        ValueFormat format = byTopic.get(topic);
        if (format == null) {
            format = defaultFormat;
            for (Override o : overrides) {
                if (o.topics().matcher(topic).matches()) {
                    format = o.format();
                    break;
                }
            }
            if (byTopic.size() >= CACHED_TOPICS) {
                byTopic.clear();
            }
            byTopic.put(topic, format);
        }
        return format;
    }

    /** Declares the two settings in an app's ConfigDef, their values checked at start. */
    public static ConfigDef define(ConfigDef def) {
        return def.define(
                        FORMAT,
                        ConfigDef.Type.STRING,
                        ValueFormat.AUTO.setting(),
                        (name, value) -> of(String.valueOf(value), null),
                        ConfigDef.Importance.HIGH,
                        "How input topics' values are read (a topic " + FORMATS + " names excepted): avro (Confluent"
                                + " wire format), json (a plain UTF-8 JSON object, no registry), json-schema and protobuf"
                                + " (Confluent wire format, the schema from the registry), or auto: framed values by"
                                + " their schema's type in the registry, plain JSON by its first byte '{'. A value in"
                                + " another format goes to the DLQ, reason wrong-format")
                .define(
                        FORMATS,
                        ConfigDef.Type.STRING,
                        "",
                        (name, value) -> overrides(value == null ? null : value.toString()),
                        ConfigDef.Importance.MEDIUM,
                        "Formats of some input topics: <topic-regex>=<format>,... (the regex matches the whole topic"
                                + " name; the first match wins; formats as " + FORMAT + "). Empty = every topic in "
                                + FORMAT);
    }
}
