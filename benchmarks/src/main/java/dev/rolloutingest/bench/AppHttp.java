package dev.rolloutingest.bench;

import dev.rolloutingest.embedded.ChildJvm;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** What the runs read of the apps' HTTP endpoints on loopback: the merge-worker's /pending and its round times. */
final class AppHttp {
    private static final Pattern MERGED_ROWS = Pattern.compile("(?m)^rollout_merge_rows_total\\{[^}]*\\} (\\S+)$");
    private static final Pattern SUM =
            Pattern.compile("(?m)^rollout_merge_round_(prepare|commit)_seconds_sum\\{[^}]*\\} (\\S+)$");

    private AppHttp() {}

    /** A merge-worker's /pending: its tasks' table shards with their pending generations, and their total. */
    static com.fasterxml.jackson.databind.JsonNode pendingOf(int port) throws IOException, InterruptedException {
        return new com.fasterxml.jackson.databind.ObjectMapper().readTree(get(port, "/pending"));
    }

    /** The body of a GET of a local app's HTTP endpoint. */
    private static String get(int port, String path) throws IOException, InterruptedException {
        return HttpClient.newHttpClient()
                .send(
                        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                                .build(),
                        HttpResponse.BodyHandlers.ofString())
                .body();
    }

    /** Pending generations over the workers' /pending (each answers for its own tasks); -1 while one has no answer. */
    static int pendingTotal(List<Integer> ports) {
        int total = 0;
        for (int port : ports) {
            try {
                total += pendingOf(port).path("total").asInt();
            } catch (IOException e) {
                return -1; // not up yet
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return -1;
            }
        }
        return total;
    }

    /** The merge-worker's HTTP endpoint starts after the ingest app created the table: wait for it. */
    static double awaitMergeMetrics(int port, ChildJvm merge) throws Exception {
        long deadline = System.nanoTime() + 120_000_000_000L;
        while (true) {
            try {
                return mergeBusySeconds(port);
            } catch (IOException e) {
                if (System.nanoTime() > deadline || !merge.isAlive()) {
                    throw e;
                }
                Thread.sleep(200);
            }
        }
    }

    /** Seconds the merge-worker spent preparing and committing rounds, from its /metrics. */
    static double mergeBusySeconds(int port) throws Exception {
        String body = get(port, "/metrics");
        double sum = 0;
        Matcher m = SUM.matcher(body);
        while (m.find()) {
            sum += Double.parseDouble(m.group(2));
        }
        return sum;
    }

    /** Rows the merge-worker folded into the base, every path (new, adopted, replacing, superseded), from its /metrics. */
    static double mergedRows(int port) throws Exception {
        Matcher m = MERGED_ROWS.matcher(get(port, "/metrics"));
        double rows = 0;
        while (m.find()) {
            rows += Double.parseDouble(m.group(1));
        }
        return rows;
    }
}
