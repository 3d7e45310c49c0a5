package dev.rolloutingest.launcher;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.merge.MergeConfig;
import dev.rolloutingest.table.TableSettings;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import picocli.CommandLine.Model.OptionSpec;

/** Every CLI option that stands for a setting takes its name and default from the setting's one declaration. */
class SettingDefaultsTest {
    private static List<OptionSpec> options(CommandLine line) {
        List<OptionSpec> all = new ArrayList<>(line.getCommandSpec().options());
        line.getSubcommands().values().forEach(sub -> all.addAll(options(sub)));
        return all;
    }

    @Test
    void optionsStandingForASettingDefaultToItsDeclarationAndCopyNoNameOrDefault() {
        List<String> copies = new ArrayList<>();
        List<String> checked = new ArrayList<>();
        for (OptionSpec option : options(Launcher.commandLine(Map.of()))) {
            String literal = option.defaultValue();
            if (literal != null && (literal.contains("${env:ROLLOUT_") || literal.contains("${env:SCHEMA_"))) {
                copies.add(option.longestName() + " copies an env var: " + literal);
            }
            String key = option.descriptionKey();
            if (key == null || key.isEmpty() || key.startsWith("mixinStandardHelpOptions")) {
                continue;
            }
            ConfigDef.ConfigKey setting = SettingDefaults.SETTINGS.get(key);
            assertThat(setting)
                    .as("%s names the setting %s, which is declared", option.longestName(), key)
                    .isNotNull();
            assertThat(literal)
                    .as("%s has no default of its own", option.longestName())
                    .isNull();
            assertThat(option.defaultValueString())
                    .as("%s defaults to %s's declared default", option.longestName(), key)
                    .isEqualTo(String.valueOf(setting.defaultValue));
            checked.add(option.longestName());
        }
        assertThat(copies).isEmpty();
        assertThat(checked).contains("--pending-warn", "--read-refresh-ms", "--max-bytes-per-pass", "--topic");
    }

    @Test
    void anEnvVarOfTheSettingWinsOverItsDefault() {
        CommandLine line = Launcher.commandLine(
                Map.of("ROLLOUT_WAL_PENDING_WARN_GENERATIONS", "7", "ROLLOUT_MERGE_MAX_GENERATIONS", "3"));
        List<String> defaults = new ArrayList<>();
        for (OptionSpec option : options(line)) {
            if (TableSettings.PENDING_WARN_GENERATIONS.equals(option.descriptionKey())
                    || MergeConfig.MAX_GENERATIONS.equals(option.descriptionKey())) {
                defaults.add(option.longestName() + "=" + option.defaultValueString());
            }
        }
        assertThat(defaults)
                .isNotEmpty()
                .allMatch(d -> d.equals("--pending-warn=7") || d.equals("--max-generations-per-pass=3"));
    }
}
