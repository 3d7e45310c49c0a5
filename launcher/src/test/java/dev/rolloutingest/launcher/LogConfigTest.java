package dev.rolloutingest.launcher;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.util.Objects;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.config.LoggerConfig;
import org.apache.logging.log4j.core.impl.Log4jLogEvent;
import org.apache.logging.log4j.message.SimpleMessage;
import org.junit.jupiter.api.Test;

/** The packaged log configuration (log4j2.xml, not the tests' own) quiets benign retries and nothing else. */
class LogConfigTest {
    private static final String SENDER = "org.apache.kafka.clients.producer.internals.Sender";

    @Test
    void aRetriedConcurrentTransactionsAnswerIsNotLoggedButOtherProducerWarningsAre() throws Exception {
        URI config = Objects.requireNonNull(LogConfigTest.class.getResource("/log4j2.xml"))
                .toURI();
        try (LoggerContext context = new LoggerContext("packaged-config", null, config)) {
            context.start();
            LoggerConfig sender = context.getConfiguration().getLoggerConfig(SENDER);
            assertThat(sender.getName()).isEqualTo(SENDER);
            assertThat(sender.isFiltered(
                            warning("[Producer clientId=app-StreamThread-1-producer, transactionalId=app-1]"
                                    + " Got error produce response with correlation id 14 on topic-partition"
                                    + " app-ingest-progress-changelog-0, retrying (2147483646 attempts left). Error:"
                                    + " CONCURRENT_TRANSACTIONS")))
                    .isTrue();
            assertThat(sender.isFiltered(
                            warning("[Producer clientId=app-StreamThread-1-producer, transactionalId=app-1]"
                                    + " Got error produce response with correlation id 15 on topic-partition rollouts-0,"
                                    + " retrying (2147483646 attempts left). Error: NOT_LEADER_OR_FOLLOWER")))
                    .isFalse();
            assertThat(sender.isFiltered(warning("[Producer clientId=p] Received invalid metadata error in produce"
                            + " request on partition rollouts-0 due to CONCURRENT_TRANSACTIONS")))
                    .isFalse();
        }
    }

    private static LogEvent warning(String text) {
        return Log4jLogEvent.newBuilder()
                .setLoggerName(SENDER)
                .setLevel(Level.WARN)
                .setMessage(new SimpleMessage(text))
                .build();
    }
}
