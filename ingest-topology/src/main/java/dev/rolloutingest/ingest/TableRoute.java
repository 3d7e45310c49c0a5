package dev.rolloutingest.ingest;

import dev.rolloutingest.table.catalog.TableCatalog;
import dev.rolloutingest.table.rows.RolloutSchema;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.function.UnaryOperator;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;

/**
 * Which table a record goes to: a pure function of the record (its topic, headers and fields), so a replay routes
 * every record as before. A name template ({@code rollout.table.route}) of literal text and placeholders:
 * <ul>
 *   <li>{@code ${topic}}: the record's topic; {@code ${topic.N}}: group N of {@code rollout.input.topic.pattern}
 *       matched against it (static routes);
 *   <li>{@code ${header.NAME}}: the UTF-8 value of the record's last header NAME;
 *   <li>{@code ${experiment}}, {@code ${rollout_id}}, {@code ${problem_id}}, {@code ${role}}: a string field of the
 *       rollout (dynamic routes: the value is decoded first).
 * </ul>
 * A record carrying the header {@value #TABLE_HEADER} goes to the table it names, whatever the template (a delete
 * has no fields to route by: this is how it names its table). The name must be a valid table name and match
 * {@code rollout.table.name.allow}; anything else is a refusal with its reason, for the DLQ.
 */
final class TableRoute {
    static final String TABLE_HEADER = IngestConfig.TABLE_HEADER;

    static final String NO_ROUTE = "no-route";
    static final String NAME_REFUSED = "table-name-refused";

    private static final Set<String> FIELDS =
            Set.of(RolloutSchema.EXPERIMENT, RolloutSchema.ROLLOUT_ID, RolloutSchema.PROBLEM_ID, RolloutSchema.ROLE);
    private static final Pattern PLACEHOLDER = Pattern.compile("\\$\\{([^}]*)}");

    /** One piece of the template: what it reads from the record. */
    private sealed interface Part {}

    private record Literal(String text) implements Part {}

    private record Topic(int group) implements Part {}

    private record HeaderValue(String name) implements Part {}

    private record Field(String name) implements Part {}

    /** A table name, or why the record has none. */
    record Decision(String table, String reason, String error) {
        boolean refused() {
            return table == null;
        }

        static Decision refuse(String reason, String error) {
            return new Decision(null, reason, error);
        }
    }

    private final String template;
    private final List<Part> parts;
    private final Pattern topicPattern;
    private final Pattern allowed;
    private final boolean needsFields;

    private TableRoute(String template, List<Part> parts, Pattern topicPattern, Pattern allowed) {
        this.template = template;
        this.parts = parts;
        this.topicPattern = topicPattern;
        this.allowed = allowed;
        this.needsFields = parts.stream().anyMatch(p -> p instanceof Field);
    }

    /**
     * Parses the template; fails naming {@code key} on an unknown placeholder, or a topic group without a pattern
     * that has it.
     */
    static TableRoute parse(String template, Pattern topicPattern, Pattern allowed, String key) {
        List<Part> parts = new ArrayList<>();
        Matcher m = PLACEHOLDER.matcher(template);
        int at = 0;
        while (m.find()) {
            if (m.start() > at) {
                parts.add(new Literal(template.substring(at, m.start())));
            }
            parts.add(placeholder(m.group(1), template, topicPattern, key));
            at = m.end();
        }
        if (at < template.length()) {
            parts.add(new Literal(template.substring(at)));
        }
        if (parts.isEmpty()) {
            throw new ConfigException(key, template, "the route names no table");
        }
        return new TableRoute(template, List.copyOf(parts), topicPattern, allowed);
    }

    private static Part placeholder(String name, String template, Pattern topicPattern, String key) {
        if (name.equals("topic")) {
            return new Topic(0);
        }
        if (name.startsWith("topic.")) {
            int group;
            try {
                group = Integer.parseInt(name.substring("topic.".length()));
            } catch (NumberFormatException e) {
                throw new ConfigException(key, template, "${" + name + "}: a topic group is a number, e.g. ${topic.1}");
            }
            int groups = topicPattern == null ? 0 : topicPattern.matcher("").groupCount();
            if (group < 1 || group > groups) {
                throw new ConfigException(
                        key,
                        template,
                        "${" + name + "} needs rollout.input.topic.pattern with at least " + group
                                + " group(s), it has " + groups);
            }
            return new Topic(group);
        }
        if (name.startsWith("header.") && name.length() > "header.".length()) {
            return new HeaderValue(name.substring("header.".length()));
        }
        if (FIELDS.contains(name)) {
            return new Field(name);
        }
        throw new ConfigException(
                key,
                template,
                "unknown placeholder ${" + name + "}: use ${topic}, ${topic.N}, ${header.NAME} or a field of "
                        + FIELDS);
    }

    /** True when the route reads the record's fields: the value is decoded before its table is known. */
    boolean needsFields() {
        return needsFields;
    }

    /**
     * The record's table. {@code field} reads a string field of the decoded value (null when the route does not need
     * fields, or for a delete).
     */
    Decision route(String topic, Headers headers, UnaryOperator<String> field) {
        String explicit = header(headers, TABLE_HEADER);
        if (explicit != null) {
            return checked(explicit, "header " + TABLE_HEADER);
        }
        StringBuilder name = new StringBuilder();
        for (Part part : parts) {
            String value;
            if (part instanceof Literal literal) {
                value = literal.text();
            } else if (part instanceof Topic t) {
                value = topicPart(topic, t.group());
            } else if (part instanceof HeaderValue h) {
                value = header(headers, h.name());
                if (value == null) {
                    return Decision.refuse(NO_ROUTE, "route " + template + ": the record has no header " + h.name());
                }
            } else {
                String fieldName = ((Field) part).name();
                if (field == null) {
                    return Decision.refuse(
                            NO_ROUTE,
                            "route " + template + " reads field " + fieldName + " and the record has no value (a"
                                    + " delete names its table with the header " + TABLE_HEADER + ")");
                }
                value = field.apply(fieldName);
                if (value == null || value.isEmpty()) {
                    return Decision.refuse(
                            NO_ROUTE, "route " + template + ": field " + fieldName + " is missing or empty");
                }
            }
            if (value == null) {
                return Decision.refuse(
                        NO_ROUTE, "route " + template + ": topic " + topic + " does not match the pattern");
            }
            name.append(value);
        }
        return checked(name.toString(), "route " + template);
    }

    private Decision checked(String name, String from) {
        String problem = TableCatalog.nameProblem(name);
        if (problem != null) {
            return Decision.refuse(NAME_REFUSED, from + ": " + problem);
        }
        if (!allowed.matcher(name).matches()) {
            return Decision.refuse(
                    NAME_REFUSED,
                    from + ": table name '" + name + "' does not match " + IngestConfig.TABLE_NAME_ALLOW + "="
                            + allowed.pattern());
        }
        return new Decision(name, null, null);
    }

    private String topicPart(String topic, int group) {
        if (group == 0) {
            return topic;
        }
        Matcher m = topicPattern.matcher(topic);
        return m.matches() ? m.group(group) : null;
    }

    private static String header(Headers headers, String name) {
        if (headers == null) {
            return null;
        }
        Header header = headers.lastHeader(name);
        return header == null || header.value() == null ? null : new String(header.value(), StandardCharsets.UTF_8);
    }

    @Override
    public String toString() {
        return template;
    }
}
