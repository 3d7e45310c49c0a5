package dev.rolloutingest.launcher;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.ingest.IngestConfig;
import dev.rolloutingest.merge.MergeConfig;
import dev.rolloutingest.runtime.ConfigSources;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Every knob named anywhere an operator reads (runbooks, README, docs, the compose files, alert rules, the
 * dashboard, and every string in the code: log lines and errors) is a setting the apps declare, so no log or
 * runbook tells anyone to set an environment variable nothing reads.
 */
class KnobNamesTest {
    private static final Path REPO = Path.of("..").toAbsolutePath().normalize();
    private static final Pattern KNOB = Pattern.compile("\\b((?:ROLLOUT|TASK)_[A-Z0-9_]*[A-Z0-9])\\b");
    // possessive runs: a loop per character would recurse once per character of a long string and overflow the stack
    private static final Pattern JAVA_STRING = Pattern.compile("\"((?:[^\"\\\\]++|\\\\.)*+)\"");

    @Test
    void everyKnobNamedInDocsLogsAndErrorsIsADeclaredSetting() throws Exception {
        Set<String> declared = new HashSet<>();
        IngestConfig.DEFINITION.names().forEach(k -> declared.add(ConfigSources.envName(k)));
        MergeConfig.DEFINITION.names().forEach(k -> declared.add(ConfigSources.envName(k)));
        // The launcher script's own variables.
        Matcher script = Pattern.compile("\\$\\{((?:ROLLOUT)_[A-Z0-9_]+)")
                .matcher(Files.readString(REPO.resolve("rollout-ingest")));
        while (script.find()) {
            declared.add(script.group(1));
        }
        Map<String, String> unknown = new TreeMap<>();
        try (Stream<Path> files = Files.walk(REPO)) {
            for (Path file : files.filter(Files::isRegularFile)
                    .filter(KnobNamesTest::operatorFacing)
                    .toList()) {
                String text = Files.readString(file);
                if (file.toString().endsWith(".java")) {
                    StringBuilder strings = new StringBuilder();
                    // a quote as a char literal opens no string
                    Matcher m = JAVA_STRING.matcher(text.replace("'\"'", "''"));
                    while (m.find()) {
                        strings.append(m.group(1)).append('\n');
                    }
                    text = strings.toString();
                }
                Matcher m = KNOB.matcher(text);
                while (m.find()) {
                    String knob = m.group(1);
                    if (!declared.contains(knob) && !knob.startsWith("ROLLOUT_TABLE_STORAGE_")) {
                        unknown.put(knob, REPO.relativize(file).toString());
                    }
                }
            }
        }
        assertThat(declared).contains("ROLLOUT_WAL_PENDING_WARN_GENERATIONS", "ROLLOUT_WAL_PENDING_MAX_GENERATIONS");
        assertThat(unknown)
                .as("knobs named where operators read them, but declared by no app")
                .isEmpty();
    }

    private static boolean operatorFacing(Path file) {
        String path = file.toString();
        if (path.contains("/target/") || path.contains("/.git/") || path.contains("/src/test/")) {
            return false;
        }
        return path.endsWith(".md")
                || path.endsWith(".yml")
                || path.endsWith(".json")
                || (path.endsWith(".java") && path.contains("/src/main/"));
    }
}
