package dev.rolloutingest.launcher;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.rolloutingest.runtime.HttpAccess;
import dev.rolloutingest.runtime.HttpLimits;
import dev.rolloutingest.runtime.TlsKey;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.catalog.TableCatalog;
import dev.rolloutingest.table.reads.PartitionShare;
import dev.rolloutingest.table.reads.RowStream;
import dev.rolloutingest.table.reads.ScanQuery;
import dev.rolloutingest.table.reads.TailCursor;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.arrow.flight.CallHeaders;
import org.apache.arrow.flight.CallStatus;
import org.apache.arrow.flight.FlightDescriptor;
import org.apache.arrow.flight.FlightEndpoint;
import org.apache.arrow.flight.FlightInfo;
import org.apache.arrow.flight.FlightRuntimeException;
import org.apache.arrow.flight.FlightServer;
import org.apache.arrow.flight.Location;
import org.apache.arrow.flight.NoOpFlightProducer;
import org.apache.arrow.flight.Ticket;
import org.apache.arrow.flight.auth2.CallHeaderAuthenticator;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Schema;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads for data-parallel trainers over Arrow Flight: each of N ranks takes one endpoint of a FlightInfo and reads its
 * share of the table ({@link PartitionShare}: the keys whose newest row came from its partitions), so the ranks get
 * every key's newest value once between them, each tailing its share with its own cursor.
 * <pre>
 * GetFlightInfo(command = JSON {"read": "scan" | "tail", "table": name (many tables), "cursor": c (tail),
 *                               "shares": n, "params": {columns, filters, max_offsets, batch_rows as over HTTP}})
 *     one endpoint per share (n, or one per partition the table has)
 * DoGet(ticket)
 *     a scan: the share's keys' newest values (live rows, no _deleted column), as GET /rollouts:scan, in one pass;
 *     a tail: the share's rows after the ticket's cursor (values, and deletes with _deleted true); the schema's metadata
 *     holds rollout.cursor (the share's next cursor), rollout.next_ticket (the ticket that reads on from it) and
 *     rollout.more (true: more is sealed already, read the next ticket at once)
 * </pre>
 * Tickets carry the cursor, so a rank that saves the last next_ticket resumes exactly where it stopped. The same
 * bearer tokens as the HTTP API (header {@code authorization: Bearer ...}, the read role); a client that stops reading
 * for {@link HttpLimits#stallTimeoutMs()} has its stream ended, its read released.
 */
final class FlightReads extends NoOpFlightProducer implements AutoCloseable {
    static final String CURSOR_KEY = "rollout.cursor";
    static final String NEXT_TICKET_KEY = "rollout.next_ticket";
    static final String MORE_KEY = "rollout.more";
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Logger log = LoggerFactory.getLogger(FlightReads.class);

    private final TableCatalog tables;
    private final String topic;
    private final long stallTimeoutMs;
    private final BufferAllocator allocator;
    private FlightServer server;

    private FlightReads(TableCatalog tables, String topic, long stallTimeoutMs) {
        this.tables = tables;
        this.topic = topic;
        this.stallTimeoutMs = stallTimeoutMs;
        this.allocator = new RootAllocator();
    }

    /** Serves Flight reads of {@code tables} on {@code host:port} (0 = any free port). */
    static FlightReads start(
            TableCatalog tables, String topic, String host, int port, HttpAccess access, HttpLimits limits)
            throws IOException {
        access.requireAllowedOn(host);
        FlightReads reads = new FlightReads(tables, topic, limits.stallTimeoutMs());
        try {
            Optional<TlsKey> tls = access.tlsKey(); // the HTTP endpoint's keystore: one key for both
            FlightServer.Builder builder = FlightServer.builder(
                            reads.allocator,
                            tls.isPresent() ? Location.forGrpcTls(host, port) : Location.forGrpcInsecure(host, port),
                            reads)
                    .headerAuthenticator(bearerTokens(access));
            if (tls.isPresent()) {
                builder.useTls(
                        new ByteArrayInputStream(tls.get().certificateChainPem()),
                        new ByteArrayInputStream(tls.get().privateKeyPem()));
            }
            reads.server = builder.build().start();
        } catch (IOException | RuntimeException e) {
            reads.allocator.close();
            throw new IOException("cannot serve Arrow Flight on " + host + ":" + port + ": " + e.getMessage(), e);
        }
        return reads;
    }

    /** Where clients connect: {@code grpc+tls://host:port} with a keystore set, else {@code grpc+tcp://host:port}. */
    String location() {
        return server.getLocation().getUri().toString();
    }

    int port() {
        return server.getPort();
    }

    private static CallHeaderAuthenticator bearerTokens(HttpAccess access) {
        return headers -> {
            Optional<HttpAccess.Refusal> refused =
                    access.refusal(authorization(headers), HttpAccess.Access.READ, "GET");
            if (refused.isPresent()) {
                CallStatus status =
                        refused.get().status() == 403 ? CallStatus.UNAUTHORIZED : CallStatus.UNAUTHENTICATED;
                throw status.withDescription(refused.get().message()).toRuntimeException();
            }
            return () -> "";
        };
    }

    private static String authorization(CallHeaders headers) {
        for (String key : headers.keys()) {
            if (key.equalsIgnoreCase("authorization")) {
                return headers.get(key);
            }
        }
        return null;
    }

    @Override
    public FlightInfo getFlightInfo(CallContext context, FlightDescriptor descriptor) {
        return answer(() -> {
            if (!descriptor.isCommand()) {
                throw new IllegalArgumentException(
                        "describe a read by a command: JSON {\"read\": \"scan\" | \"tail\", ...}");
            }
            JsonNode command = parse(descriptor.getCommand(), "command");
            String read = text(command, "read");
            if (!"scan".equals(read) && !"tail".equals(read)) {
                throw new IllegalArgumentException("read must be \"scan\" or \"tail\", was " + command.get("read"));
            }
            String tableName = text(command, "table");
            RolloutTable table = table(tableName);
            Map<String, String> params = params(command);
            TrainingReads.check(params, TrainingReads.FLIGHT_PARAMS);
            TrainingReads.query(params); // a bad parameter fails here, before any endpoint is handed out
            String cursorText = text(command, "cursor");
            if ("scan".equals(read) && cursorText != null) {
                throw new IllegalArgumentException("a scan reads from the start: give a cursor to a tail");
            }
            TailCursor cursor = "scan".equals(read)
                    ? null // a scan's ticket; its answer's next ticket tails from the scan's cursor
                    : cursorText == null ? table.startCursor(topic) : TailCursor.decode(cursorText);
            if (cursor != null) {
                cursor.requireOf(table.location().uri(), topic);
            }
            int shares = command.hasNonNull("shares")
                    ? command.get("shares").asInt()
                    : Math.max(1, table.generations().shards().size()); // a shard is a partition
            if (shares < 1 || shares > PartitionShare.MAX_COUNT) {
                throw new IllegalArgumentException(
                        "shares must be between 1 and " + PartitionShare.MAX_COUNT + ", was " + command.get("shares"));
            }
            List<FlightEndpoint> endpoints = new ArrayList<>();
            for (int i = 0; i < shares; i++) {
                endpoints.add(endpointOf(ticket(tableName, cursor, new PartitionShare(i, shares), params)));
            }
            return new FlightInfo(null, descriptor, endpoints, -1, -1);
        });
    }

    @Override
    public void getStream(CallContext context, Ticket ticket, ServerStreamListener listener) {
        RowStream stream;
        JsonNode read;
        try {
            read = parse(ticket.getBytes(), "ticket");
            String tableName = text(read, "table");
            RolloutTable table = table(tableName);
            Map<String, String> params = params(read);
            TrainingReads.check(params, TrainingReads.FLIGHT_PARAMS);
            String share = text(read, "share");
            ScanQuery query = TrainingReads.query(params)
                    .withShare(share == null ? PartitionShare.ALL : PartitionShare.parse(share));
            String cursor = text(read, "cursor");
            if ("scan".equals(text(read, "read"))) {
                if (cursor != null) {
                    throw new IllegalArgumentException("a scan ticket carries no cursor");
                }
                stream = table.scan(query, topic);
            } else {
                long maxOffsets = TrainingReads.maxOffsets(params);
                stream = table.tail(
                        cursor == null ? table.startCursor(topic) : TailCursor.decode(cursor),
                        topic,
                        query,
                        maxOffsets);
            }
        } catch (RuntimeException e) {
            listener.error(status(e).toRuntimeException());
            return;
        }
        stream(stream, read, listener);
    }

    /** Writes the stream's batches as the client reads them; a client that reads nothing for the limit is dropped. */
    private void stream(RowStream stream, JsonNode read, ServerStreamListener listener) {
        try (stream) {
            VectorSchemaRoot rows = stream.getVectorSchemaRoot();
            Map<String, String> metadata = new LinkedHashMap<>();
            metadata.put(CURSOR_KEY, stream.cursor().encode());
            metadata.put(NEXT_TICKET_KEY, nextTicket(read, stream.cursor()));
            metadata.put(MORE_KEY, Boolean.toString(stream.more()));
            Schema schema = new Schema(rows.getSchema().getFields(), metadata);
            VectorSchemaRoot sent = new VectorSchemaRoot(schema, rows.getFieldVectors(), 0);
            listener.start(sent);
            int ahead = 0; // batches put since the client was last seen ready (ready: it took nearly all before)
            while (stream.loadNextBatch()) { // each batch in buffers of its own: one still queued is not overwritten
                sent.setRowCount(rows.getRowCount());
                if (listener.isReady()) {
                    ahead = 0;
                } else if (ahead >= BATCHES_AHEAD) {
                    if (awaitReady(listener) == Ready.TIMEOUT) {
                        listener.error(CallStatus.TIMED_OUT
                                .withDescription("the client read nothing for " + stallTimeoutMs + " ms ("
                                        + HttpLimits.STALL_TIMEOUT_MS + "): the stream was ended")
                                .toRuntimeException());
                        return;
                    }
                    ahead = 0;
                }
                if (listener.isCancelled()) {
                    return; // the client went away: the stream is closed, its read released
                }
                listener.putNext();
                ahead++;
            }
            listener.completed();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            listener.error(CallStatus.CANCELLED
                    .withDescription("the server is stopping")
                    .toRuntimeException());
        } catch (IOException | RuntimeException e) {
            listener.error(status(e).toRuntimeException());
        }
    }

    /**
     * Batches put without waiting for the client: gRPC says "ready" only once the last batch is nearly all taken, so
     * waiting before each batch would leave the connection idle while the next one is put; this many batches may be
     * queued, which bounds a stream's memory at as many batches (scan batch rows each).
     */
    static final int BATCHES_AHEAD = 4;

    private enum Ready {
        READY,
        CANCELLED,
        TIMEOUT
    }

    /**
     * Waits until the client can take the next batch, at most the stall limit. Polls the listener's own readiness
     * (1 ms pauses) rather than waiting on Flight's on-ready callback: a callback missed while the client paused
     * would otherwise hold a live client's stream until the limit and end it.
     */
    private Ready awaitReady(ServerStreamListener listener) throws InterruptedException {
        long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(stallTimeoutMs);
        while (!listener.isReady()) {
            if (listener.isCancelled()) {
                return Ready.CANCELLED;
            }
            if (System.nanoTime() > deadline) {
                return Ready.TIMEOUT;
            }
            Thread.sleep(1);
        }
        return listener.isCancelled() ? Ready.CANCELLED : Ready.READY;
    }

    private RolloutTable table(String name) {
        if (tables.isSingle()) {
            if (name != null && !name.equals(TableCatalog.SINGLE)) {
                throw new IllegalArgumentException("this deployment serves one table: leave out \"table\"");
            }
            return tables.only();
        }
        if (name == null) {
            throw new IllegalArgumentException("this deployment serves many tables: name one with \"table\"");
        }
        return tables.open(name).orElseThrow(() -> new TableNotFound("no table '" + name + "' under " + tables.uri()));
    }

    /**
     * A read's ticket: a tail from {@code cursor}, or with none the scan of every key's newest value (one pass, as
     * the HTTP scan: a tail from the start reads the base once per answer of offsets and keeps deletes).
     */
    private static String ticket(String table, TailCursor cursor, PartitionShare share, Map<String, String> params) {
        ObjectNode ticket = JSON.createObjectNode();
        if (table != null) {
            ticket.put("table", table);
        }
        if (cursor == null) {
            ticket.put("read", "scan");
        } else {
            ticket.put("cursor", cursor.encode());
        }
        ticket.put("share", share.toString());
        ObjectNode p = ticket.putObject("params");
        params.forEach(p::put);
        return ticket.toString();
    }

    /** The tail that reads on from where this answer ended (after a scan too). */
    private static String nextTicket(JsonNode read, TailCursor next) {
        ObjectNode ticket = ((ObjectNode) read).deepCopy();
        ticket.remove("read");
        ticket.put("cursor", next.encode());
        return ticket.toString();
    }

    private static FlightEndpoint endpointOf(String ticket) {
        return new FlightEndpoint(new Ticket(ticket.getBytes(StandardCharsets.UTF_8)));
    }

    private static JsonNode parse(byte[] bytes, String what) {
        try {
            JsonNode node = JSON.readTree(bytes);
            if (node == null || !node.isObject()) {
                throw new IllegalArgumentException("the " + what + " is not a JSON object");
            }
            return node;
        } catch (IOException e) {
            throw new IllegalArgumentException("the " + what + " is not JSON: " + e.getMessage());
        }
    }

    private static String text(JsonNode node, String field) {
        JsonNode value = node.get(field);
        if (value == null || value.isNull()) {
            return null;
        }
        if (!value.isTextual()) {
            throw new IllegalArgumentException("\"" + field + "\" must be a string");
        }
        return value.asText();
    }

    /** The read's parameters, as the HTTP API takes them in its query string. */
    private static Map<String, String> params(JsonNode node) {
        Map<String, String> params = new HashMap<>();
        JsonNode p = node.get("params");
        if (p == null || p.isNull()) {
            return params;
        }
        if (!p.isObject()) {
            throw new IllegalArgumentException("\"params\" must be a JSON object");
        }
        for (Iterator<Map.Entry<String, JsonNode>> it = p.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            params.put(
                    e.getKey(),
                    e.getValue().isTextual()
                            ? e.getValue().asText()
                            : e.getValue().toString());
        }
        return params;
    }

    private interface Answer<T> {
        T get();
    }

    private static <T> T answer(Answer<T> answer) {
        try {
            return answer.get();
        } catch (RuntimeException e) {
            throw status(e).toRuntimeException();
        }
    }

    /** The table's refusals as Flight statuses, as the HTTP API answers them. */
    private static CallStatus status(Exception e) {
        if (e instanceof FlightRuntimeException flight) {
            return flight.status();
        }
        if (e instanceof TableNotFound) {
            return CallStatus.NOT_FOUND.withDescription(e.getMessage());
        }
        if (e instanceof RolloutTableException.StaleCursor) {
            return CallStatus.INVALID_ARGUMENT.withDescription(
                    "stale cursor (" + e.getMessage() + "): read the table again from a scan");
        }
        if (e instanceof RolloutTableException.Busy
                || e instanceof RolloutTableException.PendingBacklogTooLarge
                || e instanceof RolloutTableException.TooManyPendingRows) {
            return CallStatus.UNAVAILABLE.withDescription(e.getMessage());
        }
        if (e instanceof IllegalArgumentException) {
            return CallStatus.INVALID_ARGUMENT.withDescription(e.getMessage());
        }
        String id = java.util.UUID.randomUUID().toString().substring(0, 13);
        log.error("Arrow Flight read failed [correlation id {}]", id, e);
        return CallStatus.INTERNAL.withDescription("the table cannot be read right now [correlation id " + id + "]");
    }

    private static final class TableNotFound extends RuntimeException {
        TableNotFound(String message) {
            super(message);
        }
    }

    @Override
    public void close() throws InterruptedException {
        server.shutdown();
        if (!server.awaitTermination(5, java.util.concurrent.TimeUnit.SECONDS)) {
            server.close();
        }
        allocator.close();
    }
}
