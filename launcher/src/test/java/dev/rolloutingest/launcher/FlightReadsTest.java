package dev.rolloutingest.launcher;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.rolloutingest.runtime.HttpAccess;
import dev.rolloutingest.runtime.HttpLimits;
import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.catalog.TableCatalog;
import dev.rolloutingest.table.merge.MergeRequest;
import dev.rolloutingest.table.rows.RolloutRow;
import dev.rolloutingest.table.rows.Tombstones;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.arrow.flight.CallHeaders;
import org.apache.arrow.flight.FlightCallHeaders;
import org.apache.arrow.flight.FlightClient;
import org.apache.arrow.flight.FlightDescriptor;
import org.apache.arrow.flight.FlightEndpoint;
import org.apache.arrow.flight.FlightInfo;
import org.apache.arrow.flight.FlightRuntimeException;
import org.apache.arrow.flight.FlightStatusCode;
import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.flight.HeaderCallOption;
import org.apache.arrow.flight.Location;
import org.apache.arrow.flight.Ticket;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Arrow Flight reads through a real Flight server and Arrow's own Flight client: ranks taking disjoint endpoints get
 * every key's newest value once between them, each tails its share from its ticket, and the HTTP API's tokens hold.
 */
class FlightReadsTest {
    private static final String READ_TOKEN = "read-token-0123456789abcdef";
    private static final String TOPIC = "rollouts";
    private static final int PARTITIONS = 4;
    private static final ObjectMapper JSON = new ObjectMapper();

    private RolloutTable table;
    private FlightReads flight;
    private RootAllocator allocator;
    private FlightClient client;
    private final HeaderCallOption token = bearer(READ_TOKEN);

    @BeforeEach
    void serve() throws Exception {
        Path dir =
                Path.of("target", "flight-reads", UUID.randomUUID().toString()).toAbsolutePath();
        table = RolloutTable.createOrOpen(
                TableLocation.local(dir),
                TableSettings.DEFAULTS.with(TableSettings.SCAN_BATCH_ROWS, 16),
                new SimpleMeterRegistry());
        for (int p = 0; p < PARTITIONS; p++) {
            write(p, 0, puts(p, 0, 39)); // merged below
            table.merges().pass(MergeRequest.of(ShardId.of(TOPIC, p)).limits(100, Long.MAX_VALUE));
            write(p, 40, puts(p, 40, 59)); // pending
        }
        flight = serve(table, READ_TOKEN);
        allocator = new RootAllocator();
        client = FlightClient.builder(allocator, Location.forGrpcInsecure("127.0.0.1", flight.port()))
                .build();
    }

    @AfterEach
    void stop() throws Exception {
        client.close();
        allocator.close();
        flight.close();
        table.close();
    }

    private static List<RolloutRow> puts(int partition, long first, long last) {
        RolloutGenerator generator = new RolloutGenerator("exp-" + partition, 64, partition);
        List<RolloutRow> rows = new ArrayList<>();
        for (long offset = first; offset <= last; offset++) {
            rows.add(new RolloutRow(generator.rollout(offset, (int) offset), partition, offset, Instant.now()));
        }
        return rows;
    }

    private void write(int partition, long first, List<RolloutRow> rows) {
        table.generations().write(TOPIC, partition, first, first + rows.size() - 1, rows, rows.size() * 64L);
    }

    /** What one DoGet handed over: per record_id its partition, reward and whether it is a delete; the next ticket. */
    record Read(
            Map<String, Integer> partitions,
            Map<String, Float> rewards,
            Map<String, Boolean> deletes,
            Ticket next,
            boolean more) {}

    private Read read(Ticket ticket) throws Exception {
        Map<String, Integer> partitions = new HashMap<>();
        Map<String, Float> rewards = new HashMap<>();
        Map<String, Boolean> deletes = new HashMap<>();
        try (FlightStream stream = client.getStream(ticket, token)) {
            VectorSchemaRoot root = stream.getRoot();
            Map<String, String> metadata = root.getSchema().getCustomMetadata();
            while (stream.next()) {
                VarCharVector ids = (VarCharVector) root.getVector("record_id");
                IntVector partition = (IntVector) root.getVector("source_partition");
                Float4Vector reward = (Float4Vector) root.getVector("reward");
                BitVector deleted = (BitVector) root.getVector("_deleted");
                for (int i = 0; i < root.getRowCount(); i++) {
                    String id = ids.getObject(i).toString();
                    assertThat(partitions.put(id, partition.get(i)))
                            .as("one row of %s", id)
                            .isNull();
                    rewards.put(id, reward.isNull(i) ? null : reward.get(i));
                    deletes.put(id, deleted != null && deleted.get(i) == 1); // a scan's answer holds live rows only
                }
            }
            metadata = stream.getRoot().getSchema().getCustomMetadata();
            return new Read(
                    partitions,
                    rewards,
                    deletes,
                    new Ticket(metadata.get(FlightReads.NEXT_TICKET_KEY).getBytes(StandardCharsets.UTF_8)),
                    Boolean.parseBoolean(metadata.get(FlightReads.MORE_KEY)));
        }
    }

    private FlightInfo info(String read, int shares) throws Exception {
        ObjectNode command = JSON.createObjectNode().put("read", read).put("shares", shares);
        command.putObject("params").put("columns", "record_id,source_partition,reward");
        return client.getInfo(FlightDescriptor.command(JSON.writeValueAsBytes(command)), token);
    }

    @Test
    void ranksTakingDisjointEndpointsGetEveryKeysNewestValueOnceAndEachTailsItsShare() throws Exception {
        // a key of partition 0 updated on partition 2 (the newest value moves to another share), one deleted
        Rollout moved = new RolloutGenerator("exp-0", 64, 0).rollout(5, 5);
        moved.setReward(99f);
        write(2, 60, List.of(new RolloutRow(moved, 2, 60, Instant.now())));
        String gone = RolloutGenerator.recordId("exp-1", 7);
        write(1, 60, List.of(new RolloutRow(Tombstones.of(gone, Instant.now()), 1, 60, Instant.now())));

        int ranks = 3;
        FlightInfo scan = info("scan", ranks);
        assertThat(scan.getEndpoints()).hasSize(ranks);
        Map<String, Integer> rankOf = new HashMap<>();
        List<Ticket> next = new ArrayList<>();
        for (int rank = 0; rank < ranks; rank++) {
            Read share = read(scan.getEndpoints().get(rank).getTicket());
            assertThat(share.more()).isFalse();
            for (Map.Entry<String, Integer> row : share.partitions().entrySet()) {
                assertThat(row.getValue() % ranks)
                        .as("%s belongs to share %d", row.getKey(), rank)
                        .isEqualTo(rank);
                assertThat(rankOf.put(row.getKey(), rank))
                        .as("%s handed to one rank", row.getKey())
                        .isNull();
                if (row.getKey().equals(moved.getRecordId())) {
                    assertThat(share.rewards().get(row.getKey()))
                            .as("the newest value")
                            .isEqualTo(99f);
                }
            }
            next.add(share.next());
        }
        assertThat(rankOf).as("a scan hands out live rows only").doesNotContainKey(gone);
        long live = rankOf.keySet().stream().filter(id -> !id.equals(gone)).count();
        assertThat(live).as("every live key once between the ranks").isEqualTo(PARTITIONS * 60L - 1);
        assertThat(rankOf).containsKey(moved.getRecordId());

        // new rows on every partition: each rank's next ticket hands its share's new rows, once
        for (int p = 0; p < PARTITIONS; p++) {
            long first = p == 1 || p == 2 ? 61 : 60; // partitions 1 and 2 took offset 60 above
            write(p, first, puts(p, first, first + 9));
        }
        Map<String, Integer> tailed = new HashMap<>();
        for (int rank = 0; rank < ranks; rank++) {
            Read share = read(next.get(rank));
            share.partitions().forEach((id, partition) -> assertThat(tailed.put(id, partition))
                    .isNull());
            // a rank restarted from the ticket it saved reads the same rows again, and nothing after its next
            assertThat(read(next.get(rank)).partitions()).isEqualTo(share.partitions());
            assertThat(read(share.next()).partitions()).isEmpty();
        }
        assertThat(tailed).hasSize(PARTITIONS * 10);
    }

    @Test
    void aTailOfOneShareReadsOnlyItsPartitionsAndCarriesItsCursor() throws Exception {
        FlightInfo tail = info("tail", 2);
        Read first = read(tail.getEndpoints().get(1).getTicket());
        assertThat(first.partitions().values()).containsOnly(1, 3);
        assertThat(first.partitions()).hasSize(2 * 60);
    }

    @Test
    void callsWithoutAReadTokenAreRefusedAndBadRequestsNamed() throws Exception {
        FlightDescriptor scan = FlightDescriptor.command("{\"read\":\"scan\"}".getBytes(StandardCharsets.UTF_8));
        assertThatThrownBy(() -> client.getInfo(scan))
                .isInstanceOfSatisfying(
                        FlightRuntimeException.class,
                        e -> assertThat(e.status().code()).isEqualTo(FlightStatusCode.UNAUTHENTICATED));
        assertThatThrownBy(() -> client.getInfo(scan, bearer("not-a-token")))
                .isInstanceOfSatisfying(
                        FlightRuntimeException.class,
                        e -> assertThat(e.status().code()).isEqualTo(FlightStatusCode.UNAUTHENTICATED));
        FlightDescriptor bad =
                FlightDescriptor.command("{\"read\":\"tail\",\"params\":{\"experiment\":\"x\",\"colour\":\"red\"}}"
                        .getBytes(StandardCharsets.UTF_8));
        assertThatThrownBy(() -> client.getInfo(bad, token)).isInstanceOfSatisfying(FlightRuntimeException.class, e -> {
            assertThat(e.status().code()).isEqualTo(FlightStatusCode.INVALID_ARGUMENT);
            assertThat(e.getMessage()).contains("colour");
        });
        // no shares given: one endpoint per partition the table has
        FlightInfo info = client.getInfo(scan, token);
        assertThat(info.getEndpoints()).hasSize(PARTITIONS);
        FlightEndpoint any = info.getEndpoints().get(0);
        assertThat(new String(any.getTicket().getBytes(), StandardCharsets.UTF_8))
                .contains("\"share\":\"0/4\"");
    }

    @Test
    void aStreamWhoseClientStopsReadingIsEndedWithinTheStallLimit() throws Exception {
        RolloutGenerator big = new RolloutGenerator("exp-big", 16 * 1024, 9);
        List<RolloutRow> rows = new ArrayList<>();
        for (long offset = 60; offset < 2060; offset++) { // 2,000 rows of 16 KiB: more than the buffers on the way hold
            rows.add(new RolloutRow(big.rollout(offset, 1), 3, offset, Instant.now()));
        }
        table.generations().write(TOPIC, 3, 60, 2059, rows, rows.size() * 16 * 1024L);
        long stallMs = 500;
        try (FlightReads strict = FlightReads.start(
                        TableCatalog.single(table),
                        TOPIC,
                        "127.0.0.1",
                        0,
                        HttpAccess.OPEN,
                        new HttpLimits(2, stallMs));
                FlightClient reader = FlightClient.builder(
                                allocator, Location.forGrpcInsecure("127.0.0.1", strict.port()))
                        .build()) {
            ObjectNode command = JSON.createObjectNode().put("read", "scan").put("shares", 1);
            FlightInfo info = reader.getInfo(FlightDescriptor.command(JSON.writeValueAsBytes(command)));
            try (FlightStream stream =
                    reader.getStream(info.getEndpoints().get(0).getTicket())) {
                assertThat(stream.next()).isTrue(); // the stream runs; then the client reads nothing for a while
                Thread.sleep(stallMs * 6);
                assertThatThrownBy(() -> {
                            while (stream.next()) {
                                // drain what was buffered before the server ended the stream
                            }
                        })
                        .isInstanceOfSatisfying(FlightRuntimeException.class, e -> {
                            assertThat(e.status().code()).isEqualTo(FlightStatusCode.TIMED_OUT);
                            assertThat(e.getMessage()).contains(HttpLimits.STALL_TIMEOUT_MS);
                        });
            }
        }
    }

    @Test
    void withTheHttpKeystoreSetFlightServesTlsWithItsKeyAndRefusesPlaintext() throws Exception {
        TlsReads tls = serveTls(
                table,
                READ_TOKEN,
                Path.of("target", "flight-tls", UUID.randomUUID().toString()));
        try (FlightReads secure = tls.reads();
                java.io.InputStream trusted = java.nio.file.Files.newInputStream(tls.certificate());
                FlightClient overTls = FlightClient.builder(allocator, Location.forGrpcTls("127.0.0.1", secure.port()))
                        .trustedCertificates(trusted)
                        .build();
                FlightClient plain = FlightClient.builder(
                                allocator, Location.forGrpcInsecure("127.0.0.1", secure.port()))
                        .build()) {
            assertThat(secure.location()).startsWith("grpc+tls://");
            ObjectNode command = JSON.createObjectNode().put("read", "scan").put("shares", 1);
            command.putObject("params").put("columns", "record_id");
            FlightInfo info = overTls.getInfo(FlightDescriptor.command(JSON.writeValueAsBytes(command)), token);
            long rows = 0;
            try (FlightStream stream =
                    overTls.getStream(info.getEndpoints().get(0).getTicket(), token)) {
                while (stream.next()) {
                    rows += stream.getRoot().getRowCount();
                }
            }
            assertThat(rows).as("every key over TLS").isEqualTo(PARTITIONS * 60L);
            assertThatThrownBy(() -> plain.getInfo(FlightDescriptor.command(JSON.writeValueAsBytes(command)), token))
                    .as("a plaintext client gets no answer from the TLS port")
                    .isInstanceOf(FlightRuntimeException.class);
        }
    }

    /** Flight reads served with TLS, and the PEM of the certificate a client trusts. */
    record TlsReads(FlightReads reads, Path certificate) {}

    /** As {@link #serve}, over TLS with a self-signed key made in {@code dir} and set as the HTTP keystore. */
    static TlsReads serveTls(RolloutTable table, String readToken, Path dir) throws java.io.IOException {
        Path keystore = dir.toAbsolutePath().resolve("server.p12");
        Path pem = dir.toAbsolutePath().resolve("server.pem");
        java.nio.file.Files.createDirectories(keystore.getParent());
        SelfSignedTls.create(keystore, pem);
        HttpAccess access = HttpAccess.fromEnv(Map.of(
                "HTTP_AUTH_TOKENS",
                "trainer:read:" + readToken,
                "HTTP_TLS_KEYSTORE_PATH",
                keystore.toString(),
                "HTTP_TLS_KEYSTORE_PASSWORD",
                SelfSignedTls.PASSWORD));
        return new TlsReads(
                FlightReads.start(TableCatalog.single(table), TOPIC, "127.0.0.1", 0, access, HttpLimits.DEFAULTS), pem);
    }

    /** Flight reads of {@code table} on a free loopback port, for holders of {@code readToken}. */
    static FlightReads serve(RolloutTable table, String readToken) throws java.io.IOException {
        return FlightReads.start(
                TableCatalog.single(table),
                TOPIC,
                "127.0.0.1",
                0,
                HttpAccess.fromEnv(Map.of("HTTP_AUTH_TOKENS", "trainer:read:" + readToken)),
                HttpLimits.DEFAULTS);
    }

    private static HeaderCallOption bearer(String token) {
        CallHeaders headers = new FlightCallHeaders();
        headers.insert("authorization", "Bearer " + token);
        return new HeaderCallOption(headers);
    }
}
