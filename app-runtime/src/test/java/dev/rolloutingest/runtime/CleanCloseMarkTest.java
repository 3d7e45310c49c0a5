package dev.rolloutingest.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Properties;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.Stores;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Local stores are wiped before a start after a killed run, kept after a clean close; the process id stays. */
class CleanCloseMarkTest {
    @TempDir
    Path stateDir;

    @Test
    void storesOfAKilledRunAreWipedBeforeTheStartAndThoseOfACleanCloseKept() throws Exception {
        Path app = stateDir.resolve("mark-test");
        Path store = app.resolve("0_0").resolve("rocksdb").resolve("progress");

        Run first = new Run();
        assertThat(first.wiped).as("the very first start: nothing to wipe").isFalse();
        Path processId = app.resolve("kafka-streams-process-metadata");
        assertThat(processId).exists();
        String id = Files.readString(processId);
        Files.createDirectories(store);
        Files.writeString(store.resolve("000001.sst"), "rows");
        first.streams.close(); // killed: never marked

        Run afterKill = new Run();
        assertThat(afterKill.wiped).isTrue();
        assertThat(app.resolve("0_0")).doesNotExist();
        assertThat(Files.readString(processId))
                .as("the process id, hence the transactional ids that fence the killed run")
                .isEqualTo(id);
        Files.createDirectories(store);
        Files.writeString(store.resolve("000002.sst"), "rows");
        afterKill.streams.close();
        afterKill.mark.closedCleanly();

        Run afterCleanClose = new Run();
        assertThat(afterCleanClose.wiped).isFalse();
        assertThat(store.resolve("000002.sst")).exists();
        afterCleanClose.streams.close(); // killed again: the mark was removed at the start

        Run afterSecondKill = new Run();
        assertThat(afterSecondKill.wiped).isTrue();
        assertThat(store).doesNotExist();
        afterSecondKill.streams.close();
    }

    /** One start of the app, as StreamsRuntime does it: the mark read, Streams built, the wipe decided. */
    private final class Run {
        final CleanCloseMark mark;
        final KafkaStreams streams;
        final boolean wiped;

        Run() {
            Properties props = new Properties();
            props.put(StreamsConfig.APPLICATION_ID_CONFIG, "mark-test");
            props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "localhost:1");
            props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
            props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
            Topology topology = new Topology();
            topology.addSource("in", "mark-test-input");
            topology.addProcessor(
                    "count",
                    () -> new Processor<Object, Object, Object, Object>() {
                        @Override
                        public void process(Record<Object, Object> record) {}
                    },
                    "in");
            topology.addStateStore(
                    Stores.keyValueStoreBuilder(
                            Stores.persistentKeyValueStore("progress"), Serdes.String(), Serdes.Long()),
                    "count");
            mark = new CleanCloseMark("mark-test", props);
            streams = new KafkaStreams(topology, props);
            wiped = mark.wipeIfNotClosedCleanly(streams);
        }
    }
}
