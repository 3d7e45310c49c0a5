package dev.rolloutingest.launcher;

import dev.rolloutingest.ingest.IngestConfig;
import dev.rolloutingest.merge.MergeConfig;
import dev.rolloutingest.runtime.ConfigSources;
import java.util.concurrent.Callable;
import org.apache.kafka.common.config.ConfigDef;
import picocli.CommandLine.Command;

@Command(
        name = "config-docs",
        mixinStandardHelpOptions = true,
        description = "Print the configuration tables (Markdown) generated from the config classes, as in the README.")
final class ConfigDocsCommand implements Callable<Integer> {
    @Override
    public Integer call() {
        System.out.print(markdown());
        return 0;
    }

    static String markdown() {
        return "### ingest-topology (`rollout-ingest ingest [file]`)\n\n" + table(IngestConfig.DEFINITION)
                + "\n### merge-worker (`rollout-ingest merge [file]`)\n\n" + table(MergeConfig.DEFINITION);
    }

    private static String table(ConfigDef def) {
        StringBuilder out = new StringBuilder("| key | env var | default | description |\n|---|---|---|---|\n");
        for (ConfigDef.ConfigKey key : def.configKeys().values()) {
            if (key.internalConfig) {
                continue; // fault injection for tests: not a setting for operators
            }
            String fallback = key.hasDefault()
                    ? (key.defaultValue == null ? "" : String.valueOf(key.defaultValue))
                    : "(required)";
            out.append("| `")
                    .append(key.name)
                    .append("` | `")
                    .append(ConfigSources.envName(key.name))
                    .append("` | ")
                    .append(fallback.isEmpty() ? "\"\"" : "`" + fallback + "`")
                    .append(" | ")
                    .append(key.documentation.replace("|", "\\|"))
                    .append(" |\n");
        }
        return out.toString();
    }
}
