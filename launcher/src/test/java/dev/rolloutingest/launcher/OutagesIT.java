package dev.rolloutingest.launcher;

import static dev.rolloutingest.launcher.FaultRig.SEALED;
import static dev.rolloutingest.launcher.FaultRig.secondsUntil;
import static dev.rolloutingest.launcher.FaultRig.verifyEverythingOnce;
import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.embedded.EmbeddedS3;
import dev.rolloutingest.ingest.IngestApp;
import dev.rolloutingest.launcher.FaultRig.App;
import dev.rolloutingest.launcher.FaultRig.Producer;
import dev.rolloutingest.launcher.FaultRig.Run;
import dev.rolloutingest.merge.MergeApp;
import dev.rolloutingest.runtime.HttpEndpoint;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.TableSettings;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.time.Duration;
import java.time.LocalTime;
import java.util.HashMap;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Outages of what the apps stand on, each a case: both apps ride it out with no restart by hand, reads answer all along
 * (what they can), sealing resumes once it is over, and every produced record_id ends readable exactly once with its
 * latest value. How fast sealing resumes is printed ("recovery:").
 */
class OutagesIT {
    @RegisterExtension
    static final FaultRig rig = new FaultRig("it-faults-outages");

    enum Outage {
        /** The broker stopped (its data kept) and started again on its ports. */
        BROKER_DOWN_FOR_20_S(20, 800, 180) {
            @Override
            void begin(EmbeddedS3 s3) {
                rig.stopBroker();
            }

            @Override
            void end(EmbeddedS3 s3) {
                rig.startBroker();
            }

            @Override
            void checkReads(int[] statuses) {
                assertThat(statuses)
                        .as("reads during a broker outage answer from the table")
                        .containsAnyOf(200, 404)
                        .doesNotContain(500, 503);
            }

            @Override
            void checkAfter(App ingest, App merge) {
                assertThat(ingest.jvm.isAlive()).as("no restart by hand").isTrue();
                assertThat(merge.jvm.isAlive()).isTrue();
            }
        },
        /** The table on S3, whose server refuses every request. */
        OBJECT_STORE_REFUSING_EVERY_REQUEST_FOR_30_S(30, 600, 240) {
            @Override
            void begin(EmbeddedS3 s3) {
                s3.refuseRequests(true);
            }

            @Override
            void end(EmbeddedS3 s3) {
                s3.refuseRequests(false);
            }

            @Override
            void checkReads(int[] statuses) {
                assertThat(statuses)
                        .as("reads during the outage answer 503, not 500, not a hang")
                        .containsOnly(503);
            }

            @Override
            void checkAfter(App ingest, App merge) throws IOException {
                assertThat(Files.readString(merge.log))
                        .as("an outage is not the shards' fault: no cooldown")
                        .doesNotContain("automatic runs skip it until");
            }
        };

        final int seconds;
        final int keys;
        final int verifySeconds;

        Outage(int seconds, int keys, int verifySeconds) {
            this.seconds = seconds;
            this.keys = keys;
            this.verifySeconds = verifySeconds;
        }

        abstract void begin(EmbeddedS3 s3);

        abstract void end(EmbeddedS3 s3);

        abstract void checkReads(int[] statuses);

        abstract void checkAfter(App ingest, App merge) throws IOException;

        boolean onS3() {
            return this == OBJECT_STORE_REFUSING_EVERY_REQUEST_FOR_30_S;
        }
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(Outage.class)
    void anOutageIsRiddenOutByBothAppsWithNothingLost(Outage outage) throws Exception {
        try (EmbeddedS3 s3 = outage.onS3() ? EmbeddedS3.start(rig.root.resolve("s3"), "faults") : null) {
            Run run;
            Map<String, String> ingestSettings = Map.of();
            if (s3 != null) {
                Map<String, String> storage = new HashMap<>(s3.lanceStorageOptions());
                String tableUri = s3.uri("outage-" + UUID.randomUUID());
                storage.put("uri", tableUri);
                run = rig.run("s3", tableUri, storage);
                ingestSettings = Map.of("rollout.seal.write.attempts", "8");
            } else {
                run = rig.run("broker", null, Map.of());
            }
            App ingest = new App(
                    IngestApp.class,
                    run.config("ingest", "a", ingestSettings),
                    run.dir().resolve("ingest.log"));
            App merge = new App(
                    MergeApp.class,
                    run.config("merge", "a", Map.of()),
                    run.dir().resolve("merge.log"));
            HttpClient http = HttpClient.newHttpClient();
            ingest.start();
            merge.start();
            try (Producer producer = rig.producer(run, outage.keys, 100)) {
                assertThat(secondsUntil(ingest, 0, LocalTime.MIN, SEALED, m -> true, 120))
                        .isFinite();
                try (RolloutTable reader = RolloutTable.open(
                                run.location(),
                                TableSettings.DEFAULTS.with(TableSettings.READ_REFRESH_MS, 0),
                                new SimpleMeterRegistry());
                        HttpEndpoint readApi = new HttpEndpoint("127.0.0.1", 0)) {
                    new ReadApi(reader).mount(readApi);
                    readApi.start();
                    Thread.sleep(1_000);
                    outage.begin(s3);
                    long outageStart = System.nanoTime();
                    int[] statuses = new int[3];
                    for (int i = 0; i < 3; i++) {
                        Thread.sleep(5_000);
                        long t = System.nanoTime();
                        HttpResponse<String> answer = http.send(
                                HttpRequest.newBuilder(URI.create(readApi.baseUrl() + "/rollouts/faults-1"))
                                        .timeout(Duration.ofSeconds(60))
                                        .build(),
                                HttpResponse.BodyHandlers.ofString());
                        statuses[i] = answer.statusCode();
                        System.out.printf(
                                "recovery: a read during the outage (%s) answered %d in %.1f s%n",
                                outage, answer.statusCode(), (System.nanoTime() - t) / 1e9);
                    }
                    Thread.sleep(Math.max(0, outage.seconds * 1000L - (System.nanoTime() - outageStart) / 1_000_000));
                    long from = ingest.logSize();
                    LocalTime back = LocalTime.now();
                    outage.end(s3);
                    double resumed = secondsUntil(ingest, from, back, SEALED, m -> true, 180);
                    System.out.printf(
                            "recovery: after %s ingest sealed again %.1f s after it was over%n", outage, resumed);
                    assertThat(resumed).as("sealing resumed").isFinite();
                    outage.checkReads(statuses);
                }
                Thread.sleep(1_000);
                producer.close();
                verifyEverythingOnce(run, producer, outage.verifySeconds);
                outage.checkAfter(ingest, merge);
            } finally {
                ingest.close();
                merge.close();
            }
        }
    }
}
