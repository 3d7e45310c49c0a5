package dev.rolloutingest.launcher;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class ReadmeConfigTableTest {
    @Test
    void theReadmeConfigurationTablesMatchTheConfigClasses() throws Exception {
        String readme = Files.readString(Path.of("..", "README.md"));
        String begin = "<!-- config-docs:begin -->\n";
        String end = "<!-- config-docs:end -->";
        String documented = readme.substring(readme.indexOf(begin) + begin.length(), readme.indexOf(end));
        assertThat(documented)
                .as("README drifted from the config classes: paste `./rollout-ingest config-docs`")
                .isEqualTo(ConfigDocsCommand.markdown());
    }
}
