package dev.rolloutingest.embedded;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Collection;
import java.util.Map;
import java.util.Properties;
import kafka.server.KafkaConfig;
import kafka.server.KafkaRaftServer;
import kafka.tools.StorageTool;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.utils.Time;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A real single-node KRaft Kafka broker (combined broker + controller) inside this JVM, built from the
 * production jars. Its data directory survives {@link #close()}, so a restart on the same directory and
 * ports keeps topics and offsets.
 */
public final class EmbeddedKafka implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(EmbeddedKafka.class);

    private final Path dataDir;
    private final int brokerPort;
    private final int controllerPort;
    /** A second listener that only SASL/PLAIN clients can use, or null. */
    private final SaslPlainListener sasl;

    private KafkaRaftServer server;

    /** A SASL_PLAINTEXT listener with one PLAIN user, for tests of clients on a secured cluster. */
    public record SaslPlainListener(int port, String user, String password) {
        /** The settings a Kafka client needs to connect through this listener. */
        public Map<String, String> clientSettings() {
            return Map.of(
                    "security.protocol",
                    "SASL_PLAINTEXT",
                    "sasl.mechanism",
                    "PLAIN",
                    "sasl.jaas.config",
                    "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"" + user
                            + "\" password=\"" + password + "\";");
        }
    }

    private EmbeddedKafka(Path dataDir, int brokerPort, int controllerPort, SaslPlainListener sasl) {
        this.dataDir = dataDir;
        this.brokerPort = brokerPort;
        this.controllerPort = controllerPort;
        this.sasl = sasl;
    }

    /** Formats the directory if new, then starts the broker on free loopback ports. */
    public static EmbeddedKafka start(Path dataDir) {
        return start(dataDir, FreePorts.next(), FreePorts.next());
    }

    public static EmbeddedKafka start(Path dataDir, int brokerPort, int controllerPort) {
        EmbeddedKafka kafka = new EmbeddedKafka(dataDir.toAbsolutePath(), brokerPort, controllerPort, null);
        kafka.startServer();
        return kafka;
    }

    /**
     * A broker with, besides its plaintext listener (for the test's own set-up), a SASL_PLAINTEXT listener
     * that accepts only the given PLAIN user: a client without the security settings cannot use it.
     */
    public static EmbeddedKafka startWithSaslPlain(Path dataDir, String user, String password) {
        EmbeddedKafka kafka = new EmbeddedKafka(
                dataDir.toAbsolutePath(),
                FreePorts.next(),
                FreePorts.next(),
                new SaslPlainListener(FreePorts.next(), user, password));
        kafka.startServer();
        return kafka;
    }

    /** The SASL listener's address and credentials; fails if the broker has none. */
    public SaslPlainListener sasl() {
        if (sasl == null) {
            throw new IllegalStateException("this broker has no SASL listener: start it with startWithSaslPlain");
        }
        return sasl;
    }

    /** The SASL listener's bootstrap address. */
    public String saslBootstrapServers() {
        return "localhost:" + sasl().port();
    }

    public String bootstrapServers() {
        return "localhost:" + brokerPort;
    }

    public int brokerPort() {
        return brokerPort;
    }

    public int controllerPort() {
        return controllerPort;
    }

    public Path dataDir() {
        return dataDir;
    }

    public Admin admin() {
        return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers()));
    }

    /** Creates topics and waits until producing to them is safe (see {@link TopicReadiness}). */
    public void createTopics(Collection<NewTopic> topics) {
        try (Admin admin = admin()) {
            TopicReadiness.createAndAwait(admin, topics, Duration.ofSeconds(60));
        }
    }

    private void startServer() {
        long started = System.nanoTime();
        try {
            Path logDir = dataDir.resolve("log");
            Files.createDirectories(logDir);
            Path config = dataDir.resolve("server.properties");
            Properties props = serverProperties(logDir);
            try (Writer out = Files.newBufferedWriter(config)) {
                props.store(out, "embedded KRaft broker of rollout-ingest");
            }
            if (!Files.exists(logDir.resolve("meta.properties"))) {
                format(config);
            }
            server = new KafkaRaftServer(new KafkaConfig(props, false), Time.SYSTEM);
            server.startup();
        } catch (IOException e) {
            throw new UncheckedIOException("Could not prepare broker directory " + dataDir, e);
        }
        log.info(
                "Kafka broker up at {} (data {}) in {} ms",
                bootstrapServers(),
                dataDir,
                (System.nanoTime() - started) / 1_000_000);
    }

    private static void format(Path config) {
        ByteArrayOutputStream output = new ByteArrayOutputStream();
        int code;
        try (PrintStream print = new PrintStream(output, true, StandardCharsets.UTF_8)) {
            code = StorageTool.execute(
                    new String[] {
                        "format", "--standalone", "-t", Uuid.randomUuid().toString(), "-c", config.toString()
                    },
                    print);
        }
        if (code != 0) {
            throw new IllegalStateException(
                    "Formatting the broker storage failed (" + code + "): " + output.toString(StandardCharsets.UTF_8));
        }
    }

    private Properties serverProperties(Path logDir) {
        Properties props = new Properties();
        props.put("process.roles", "broker,controller");
        props.put("node.id", "1");
        props.put("controller.quorum.bootstrap.servers", "localhost:" + controllerPort);
        String listeners = "PLAINTEXT://localhost:" + brokerPort + ",CONTROLLER://localhost:" + controllerPort;
        String advertised = "PLAINTEXT://localhost:" + brokerPort;
        String protocols = "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT";
        if (sasl != null) {
            listeners += ",SASL_PLAINTEXT://localhost:" + sasl.port();
            advertised += ",SASL_PLAINTEXT://localhost:" + sasl.port();
            protocols += ",SASL_PLAINTEXT:SASL_PLAINTEXT";
            props.put("sasl.enabled.mechanisms", "PLAIN");
            props.put("listener.name.sasl_plaintext.sasl.enabled.mechanisms", "PLAIN");
            props.put(
                    "listener.name.sasl_plaintext.plain.sasl.jaas.config",
                    "org.apache.kafka.common.security.plain.PlainLoginModule required user_" + sasl.user() + "=\""
                            + sasl.password() + "\";");
        }
        props.put("listeners", listeners);
        props.put("advertised.listeners", advertised);
        props.put("inter.broker.listener.name", "PLAINTEXT");
        props.put("controller.listener.names", "CONTROLLER");
        props.put("listener.security.protocol.map", protocols);
        props.put("log.dirs", logDir.toString());
        props.put("offsets.topic.replication.factor", "1");
        props.put("offsets.topic.num.partitions", "4");
        // Without these an exactly_once_v2 Streams app waits for __transaction_state forever.
        props.put("transaction.state.log.replication.factor", "1");
        props.put("transaction.state.log.min.isr", "1");
        props.put("transaction.state.log.num.partitions", "4");
        props.put("share.coordinator.state.topic.replication.factor", "1");
        props.put("share.coordinator.state.topic.min.isr", "1");
        props.put("group.initial.rebalance.delay.ms", "0");
        // The cleaner's default 128 MiB dedupe buffer runs small heaps out of memory.
        props.put("log.cleaner.dedupe.buffer.size", "2097152");
        props.put("num.io.threads", "2");
        props.put("num.network.threads", "2");
        props.put("num.partitions", "1");
        props.put("auto.create.topics.enable", "false");
        return props;
    }

    /** Stops the broker; the data directory stays for a restart. */
    @Override
    public void close() {
        if (server != null) {
            server.shutdown();
            server.awaitShutdown();
            server = null;
        }
    }
}
