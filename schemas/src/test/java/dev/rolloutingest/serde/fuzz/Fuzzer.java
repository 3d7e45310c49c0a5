package dev.rolloutingest.serde.fuzz;

import dev.rolloutingest.serde.SerdeException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Stream;

/**
 * Runs one decoder over its corpus ({@code src/test/resources/fuzz/<target>/}) and then over seeded mutations of it,
 * each input in a guarded thread: an input that does not finish within {@link #HANG} is a hang, one that throws
 * anything but a record's {@link SerdeException} (what the pipeline dead-letters with its reason) is a crash. The
 * same seed gives the same inputs; the budget's time cap only cuts the sequence short on a slow machine. Failing
 * inputs are written to {@code target/fuzz-failures/<target>/}.
 */
final class Fuzzer {
    /** Far beyond any one record's decode: only a hang takes this long. */
    static final Duration HANG = Duration.ofSeconds(5);

    private static final int MAX_FAILURES = 5;

    /** The inputs a target runs at most, and for how long at most. */
    record Budget(int inputs, Duration time) {}

    /** What a run saw: inputs decoded, rejected (per reason) and the failures. */
    record Outcome(
            String target,
            int inputs,
            int decoded,
            Map<String, Integer> rejected,
            Duration took,
            List<String> failures) {
        @Override
        public String toString() {
            return String.format(
                    "fuzz %s: %,d inputs in %.1f s, %,d decoded, %,d rejected %s, %d failures",
                    target,
                    inputs,
                    took.toMillis() / 1000.0,
                    decoded,
                    rejected.values().stream().mapToInt(Integer::intValue).sum(),
                    rejected,
                    failures.size());
        }
    }

    /** Decodes one input; returns normally when it is read, throws what the decoder throws. */
    @FunctionalInterface
    interface Decoder {
        void decode(byte[] input) throws Exception;
    }

    private Fuzzer() {}

    static Outcome run(String target, long seed, Budget budget, Mutator mutator, Decoder decoder) {
        List<byte[]> corpus = corpus(target);
        SplittableRandom random = new SplittableRandom(seed);
        ExecutorService guard = guard(target);
        Map<String, Integer> rejected = new TreeMap<>();
        List<String> failures = new ArrayList<>();
        int decoded = 0;
        int inputs = 0;
        long started = System.nanoTime();
        long deadline = started + budget.time().toNanos();
        try {
            while (inputs < budget.inputs() && System.nanoTime() < deadline && failures.size() < MAX_FAILURES) {
                byte[] input = inputs < corpus.size() ? corpus.get(inputs) : mutator.mutate(corpus, random);
                int index = inputs++;
                Future<?> run = guard.submit(() -> {
                    decoder.decode(input);
                    return null;
                });
                try {
                    run.get(HANG.toMillis(), TimeUnit.MILLISECONDS);
                    decoded++;
                } catch (TimeoutException e) {
                    failures.add("input " + index + " hangs (over " + HANG.toSeconds() + " s): "
                            + keep(target, index, input));
                    run.cancel(true);
                    guard.shutdownNow(); // its thread may never come back: the next inputs get a new one
                    guard = guard(target);
                } catch (ExecutionException e) {
                    Throwable thrown = e.getCause();
                    if (thrown instanceof SerdeException fault && fault.recordsFault() && fault.reason() != null) {
                        rejected.merge(fault.reason(), 1, Integer::sum);
                    } else {
                        failures.add("input " + index + " throws " + thrown + " at " + where(thrown) + ": "
                                + keep(target, index, input));
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException(e);
                }
            }
        } finally {
            guard.shutdownNow();
        }
        return new Outcome(target, inputs, decoded, rejected, Duration.ofNanos(System.nanoTime() - started), failures);
    }

    private static ExecutorService guard(String target) {
        return Executors.newSingleThreadExecutor(r -> {
            Thread thread = new Thread(r, "fuzz-" + target);
            thread.setDaemon(true);
            return thread;
        });
    }

    /** The corpus of a target, in file-name order. */
    static List<byte[]> corpus(String target) {
        try (Stream<Path> files = Files.list(Path.of(
                Fuzzer.class.getClassLoader().getResource("fuzz/" + target).toURI()))) {
            List<byte[]> corpus = new ArrayList<>();
            for (Path file : files.sorted().toList()) {
                corpus.add(Files.readAllBytes(file));
            }
            return corpus;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Where it was thrown, and the project's frame nearest to it. */
    private static String where(Throwable thrown) {
        StackTraceElement[] trace = thrown.getStackTrace();
        if (trace.length == 0) {
            return "?";
        }
        for (StackTraceElement frame : trace) {
            if (frame.getClassName().startsWith("dev.rolloutingest.serde") && frame != trace[0]) {
                return trace[0] + " (from " + frame + ")";
            }
        }
        return trace[0].toString();
    }

    /** Writes the input where a person can replay it; returns its path and first bytes. */
    private static String keep(String target, int index, byte[] input) {
        Path file = Path.of("target", "fuzz-failures", target, index + ".bin");
        try {
            Files.createDirectories(file.getParent());
            Files.write(file, input);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        byte[] head = input.length > 64 ? java.util.Arrays.copyOf(input, 64) : input;
        return file + " (" + input.length + " bytes: " + HexFormat.of().formatHex(head)
                + (input.length > 64 ? "..." : "") + ")";
    }
}
