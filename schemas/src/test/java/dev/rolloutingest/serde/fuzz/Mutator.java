package dev.rolloutingest.serde.fuzz;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Seeded mutations of corpus inputs, as byte-level fuzzers make them: bits flipped, bytes set to boundary values,
 * ranges deleted, duplicated or inserted, splices of two inputs, truncations, varints of huge values, and tokens of
 * the format's own (a dictionary). A frame's header is left alone most of the time so the mutation reaches the decoder.
 */
final class Mutator {
    private static final byte[] BOUNDARY = {0, 1, 0x7f, (byte) 0x80, (byte) 0xff, (byte) 0xfe, 0x3f, 0x40};
    private static final byte[][] HUGE_VARINTS = {
        {(byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff, 0x0f},
        {(byte) 0xfe, (byte) 0xff, (byte) 0xff, (byte) 0xff, 0x0f},
        {
            (byte) 0x80,
            (byte) 0x80,
            (byte) 0x80,
            (byte) 0x80,
            (byte) 0x80,
            (byte) 0x80,
            (byte) 0x80,
            (byte) 0x80,
            (byte) 0x80,
            0x01
        },
        {
            (byte) 0xff,
            (byte) 0xff,
            (byte) 0xff,
            (byte) 0xff,
            (byte) 0xff,
            (byte) 0xff,
            (byte) 0xff,
            (byte) 0xff,
            (byte) 0xff,
            (byte) 0xff,
            0x01
        },
        {(byte) 0x81, (byte) 0x80, (byte) 0x80, 0x40}
    };

    private final byte[][] dictionary;
    private final int header;

    private Mutator(List<byte[]> tokens, int header) {
        this.dictionary = tokens.toArray(byte[][]::new);
        this.header = header;
    }

    /**
     * @param tokens the format's tokens (text), inserted or written over a range
     * @param header leading bytes (a frame's magic byte and schema id) left alone nine times out of ten
     */
    static Mutator text(List<String> tokens, int header) {
        return new Mutator(
                tokens.stream().map(t -> t.getBytes(StandardCharsets.UTF_8)).toList(), header);
    }

    /** As {@link #text}, the tokens as hexadecimal bytes. */
    static Mutator hex(List<String> tokens, int header) {
        return new Mutator(tokens.stream().map(HexFormat.of()::parseHex).toList(), header);
    }

    /** One to four mutations of one of the corpus inputs. */
    byte[] mutate(List<byte[]> corpus, SplittableRandom random) {
        byte[] input = corpus.get(random.nextInt(corpus.size()));
        int mutations = 1 + random.nextInt(4);
        for (int i = 0; i < mutations; i++) {
            input = once(input, corpus, random);
        }
        return input;
    }

    private byte[] once(byte[] input, List<byte[]> corpus, SplittableRandom random) {
        int from = random.nextInt(10) == 0 ? 0 : Math.min(header, input.length);
        int room = input.length - from;
        int at = from + (room <= 0 ? 0 : random.nextInt(room + 1));
        switch (random.nextInt(10)) {
            case 0 -> {
                if (room > 0) {
                    byte[] out = input.clone();
                    int p = Math.min(at, input.length - 1);
                    out[p] ^= (byte) (1 << random.nextInt(8));
                    return out;
                }
            }
            case 1 -> {
                if (room > 0) {
                    byte[] out = input.clone();
                    out[Math.min(at, input.length - 1)] = BOUNDARY[random.nextInt(BOUNDARY.length)];
                    return out;
                }
            }
            case 2 -> {
                int length = Math.min(1 + random.nextInt(16), input.length - at);
                return splice(input, at, Math.max(length, 0), new byte[0]);
            }
            case 3 -> {
                byte[] noise = new byte[1 + random.nextInt(16)];
                random.nextBytes(noise);
                return splice(input, at, 0, noise);
            }
            case 4 -> {
                if (room > 0) {
                    int start = from + random.nextInt(room);
                    int length = 1 + random.nextInt(Math.min(64, input.length - start));
                    return splice(input, at, 0, Arrays.copyOfRange(input, start, start + length));
                }
            }
            case 5 -> {
                byte[] other = corpus.get(random.nextInt(corpus.size()));
                int cut = other.length == 0 ? 0 : random.nextInt(other.length);
                return splice(input, at, input.length - at, Arrays.copyOfRange(other, cut, other.length));
            }
            case 6 -> {
                return Arrays.copyOf(input, at);
            }
            case 7 -> {
                return splice(input, at, 0, HUGE_VARINTS[random.nextInt(HUGE_VARINTS.length)]);
            }
            case 8 -> {
                if (dictionary.length > 0) {
                    return splice(input, at, 0, dictionary[random.nextInt(dictionary.length)]);
                }
            }
            default -> {
                if (dictionary.length > 0) {
                    int length = Math.min(1 + random.nextInt(8), input.length - at);
                    return splice(input, at, Math.max(length, 0), dictionary[random.nextInt(dictionary.length)]);
                }
            }
        }
        return input;
    }

    /** {@code input} with {@code length} bytes at {@code at} replaced by {@code with}. */
    private static byte[] splice(byte[] input, int at, int length, byte[] with) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(input.length + with.length);
        out.write(input, 0, at);
        out.writeBytes(with);
        out.write(input, at + length, input.length - at - length);
        return out.toByteArray();
    }
}
