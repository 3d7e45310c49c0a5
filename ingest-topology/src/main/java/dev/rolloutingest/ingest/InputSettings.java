package dev.rolloutingest.ingest;

import static org.apache.kafka.common.config.ConfigDef.Importance.HIGH;
import static org.apache.kafka.common.config.ConfigDef.Importance.LOW;
import static org.apache.kafka.common.config.ConfigDef.Importance.MEDIUM;
import static org.apache.kafka.common.config.ConfigDef.Type.LIST;
import static org.apache.kafka.common.config.ConfigDef.Type.LONG;
import static org.apache.kafka.common.config.ConfigDef.Type.STRING;

import dev.rolloutingest.runtime.CommonKeys;
import dev.rolloutingest.table.catalog.TableCatalog;
import java.util.List;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.AbstractConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;

/**
 * The ingest app's input: which topics it reads (named, several, or a pattern) and which table each record goes to
 * (routes, allowed names, declared tables). Its keys are declared in {@link IngestConfig#DEFINITION} by {@link
 * #define}, which names them there with the rest of the app's; they are read and checked together at start.
 */
public final class InputSettings {
    public static final String INPUT_TOPIC = "rollout.input.topic";
    public static final String INPUT_TOPICS = "rollout.input.topics";
    public static final String INPUT_TOPIC_PATTERN = "rollout.input.topic.pattern";
    public static final String INPUT_TOPIC_REFRESH_MS = "rollout.input.topic.refresh.ms";
    public static final String TABLE_ROUTE = "rollout.table.route";
    public static final String TABLE_NAME_ALLOW = "rollout.table.name.allow";
    public static final String TABLES_DECLARED = "rollout.tables";

    private final AbstractConfig parsed;
    private final Pattern inputPattern;
    private final TableRoute tableRoute;

    /** Declares the input's settings in the app's ConfigDef, in the README table's order. */
    static ConfigDef define(ConfigDef def) {
        return def.define(
                        INPUT_TOPIC,
                        STRING,
                        "rollouts",
                        new ConfigDef.NonEmptyString(),
                        MEDIUM,
                        "Topic of Rollout records, key = record_id (one topic; see " + INPUT_TOPICS + " and "
                                + INPUT_TOPIC_PATTERN + " for more)")
                .define(
                        INPUT_TOPICS,
                        LIST,
                        "",
                        MEDIUM,
                        "Several input topics (comma-separated); when set, " + INPUT_TOPIC + " is not read")
                .define(
                        INPUT_TOPIC_PATTERN,
                        STRING,
                        "",
                        null,
                        MEDIUM,
                        "A regex of input topics (whole name): every matching topic is read, also one created later"
                                + " (found within " + INPUT_TOPIC_REFRESH_MS + "); its groups can name tables"
                                + " (${topic.1} in " + TABLE_ROUTE + "). Not with " + INPUT_TOPICS)
                .define(
                        INPUT_TOPIC_REFRESH_MS,
                        LONG,
                        30_000L,
                        ConfigDef.Range.between(1_000, 3_600_000),
                        LOW,
                        "How soon a new topic matching " + INPUT_TOPIC_PATTERN + " is read (the consumers' metadata"
                                + " refresh)")
                .define(
                        TABLE_ROUTE,
                        STRING,
                        "${topic}",
                        new ConfigDef.NonEmptyString(),
                        HIGH,
                        "With rollout.tables.root: the table of a record, a name template of text and ${topic},"
                                + " ${topic.N} (group N of " + INPUT_TOPIC_PATTERN + "), ${header.NAME}, ${experiment},"
                                + " ${rollout_id}, ${problem_id} or ${role}; a record with the header rollout-table goes"
                                + " to the table it names. A record routed nowhere goes to the DLQ (no-route)")
                .define(
                        TABLE_NAME_ALLOW,
                        STRING,
                        ".*",
                        null,
                        MEDIUM,
                        "A regex every routed table name must match (besides being one path segment of letters,"
                                + " digits, '.', '_', '-'); others go to the DLQ (table-name-refused)")
                .define(
                        TABLES_DECLARED,
                        LIST,
                        "",
                        MEDIUM,
                        "With rollout.tables.root: tables created at start, before their first record");
    }

    /** @param manyTables whether the app writes many tables under a root (routes and declared tables need it) */
    InputSettings(AbstractConfig parsed, boolean manyTables) {
        this.parsed = parsed;
        String pattern = parsed.getString(INPUT_TOPIC_PATTERN).trim();
        if (!pattern.isEmpty() && !parsed.getList(INPUT_TOPICS).isEmpty()) {
            throw new ConfigException(INPUT_TOPIC_PATTERN, pattern, "set " + INPUT_TOPICS + " or this, not both");
        }
        this.inputPattern = pattern.isEmpty() ? null : compile(INPUT_TOPIC_PATTERN, pattern);
        Pattern allowed = compile(TABLE_NAME_ALLOW, parsed.getString(TABLE_NAME_ALLOW));
        this.tableRoute = TableRoute.parse(parsed.getString(TABLE_ROUTE), inputPattern, allowed, TABLE_ROUTE);
        if (!manyTables) {
            if (!parsed.getString(TABLE_ROUTE).equals("${topic}")) {
                throw new ConfigException(
                        TABLE_ROUTE,
                        parsed.getString(TABLE_ROUTE),
                        "routes need many tables: set " + CommonKeys.TABLES_ROOT);
            }
            if (!parsed.getList(TABLES_DECLARED).isEmpty()) {
                throw new ConfigException(
                        TABLES_DECLARED,
                        parsed.getList(TABLES_DECLARED),
                        "declared tables need many tables: set " + CommonKeys.TABLES_ROOT);
            }
        }
        for (String name : parsed.getList(TABLES_DECLARED)) {
            String problem = TableCatalog.nameProblem(name);
            if (problem != null) {
                throw new ConfigException(TABLES_DECLARED, name, problem);
            }
        }
    }

    private static Pattern compile(String key, String regex) {
        try {
            return Pattern.compile(regex);
        } catch (PatternSyntaxException e) {
            throw new ConfigException(key, regex, "not a regex: " + e.getDescription());
        }
    }

    /** The input topics by name; empty when they are a pattern ({@link #inputPattern}). */
    public List<String> inputTopics() {
        if (inputPattern != null) {
            return List.of();
        }
        List<String> topics = parsed.getList(INPUT_TOPICS);
        return topics.isEmpty() ? List.of(parsed.getString(INPUT_TOPIC)) : List.copyOf(topics);
    }

    /** The regex of the input topics, or null when they are named. */
    public Pattern inputPattern() {
        return inputPattern;
    }

    /** One input topic, named by {@link #INPUT_TOPIC}: the way every deployment was configured before many topics. */
    public boolean oneInputTopic() {
        return inputPattern == null && parsed.getList(INPUT_TOPICS).isEmpty();
    }

    /** The one input topic of {@link #oneInputTopic}; fails otherwise. */
    public String inputTopic() {
        if (!oneInputTopic()) {
            throw new IllegalStateException("this deployment reads several input topics: " + describeInput());
        }
        return parsed.getString(INPUT_TOPIC);
    }

    public boolean isInputTopic(TopicPartition partition) {
        return inputPattern != null
                ? inputPattern.matcher(partition.topic()).matches()
                : inputTopics().contains(partition.topic());
    }

    /** The input topics as the logs and errors name them. */
    public String describeInput() {
        return inputPattern != null ? "topics matching " + inputPattern.pattern() : String.join(",", inputTopics());
    }

    /** How soon the consumers find a new topic of the pattern (their metadata refresh). */
    long refreshMs() {
        return parsed.getLong(INPUT_TOPIC_REFRESH_MS);
    }

    public TableRoute tableRoute() {
        return tableRoute;
    }

    public List<String> declaredTables() {
        return parsed.getList(TABLES_DECLARED);
    }
}
