package dev.rolloutingest.launcher;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.ingest.IngestConfig;
import dev.rolloutingest.merge.MergeConfig;
import dev.rolloutingest.runtime.ConfigSources;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The compose deployment cannot run here (no Docker engine), but its app settings can drift from the
 * config classes: every env var it gives the apps must be a key they declare (or a storage option).
 */
class ComposeFileTest {
    private static final Pattern ENV_LINE = Pattern.compile("^(\\s+)([A-Z][A-Z0-9_]+):");

    @Test
    void everyEnvVarTheComposeFileGivesTheAppsIsAKeyTheyDeclare() throws Exception {
        List<String> lines = Files.readAllLines(Path.of("..", "docker", "docker-compose.yml"));
        Set<String> known = new HashSet<>();
        IngestConfig.DEFINITION.names().forEach(k -> known.add(ConfigSources.envName(k)));
        MergeConfig.DEFINITION.names().forEach(k -> known.add(ConfigSources.envName(k)));
        List<String> appEnv = appEnvironment(lines);
        assertThat(appEnv)
                .contains("BOOTSTRAP_SERVERS", "SCHEMA_REGISTRY_URL", "ROLLOUT_TABLE_URI", "ROLLOUT_STATE_DIR");
        for (String name : appEnv) {
            assertThat(known.contains(name) || name.startsWith("ROLLOUT_TABLE_STORAGE_"))
                    .as("%s in docker-compose.yml is no setting of the apps", name)
                    .isTrue();
        }
    }

    /** Env var names under the shared app environment and the ingest and merge services. */
    private static List<String> appEnvironment(List<String> lines) {
        List<String> names = new ArrayList<>();
        String top = "";
        String service = "";
        int envIndent = -1;
        for (String line : lines) {
            if (line.isBlank() || line.trim().startsWith("#")) {
                continue;
            }
            int indent = line.length() - line.stripLeading().length();
            if (envIndent >= 0 && indent <= envIndent) {
                envIndent = -1;
            }
            if (indent == 0) {
                top = line.split(":")[0];
                service = "";
            } else if (indent == 2 && top.equals("services")) {
                service = line.trim().split(":")[0];
            }
            boolean app = top.equals("x-app") || service.equals("ingest") || service.equals("merge");
            if (app && line.trim().startsWith("environment:")) {
                envIndent = indent;
                continue;
            }
            Matcher m = ENV_LINE.matcher(line);
            if (envIndent >= 0 && m.find()) {
                names.add(m.group(2));
            }
        }
        return names;
    }
}
