package dev.rolloutingest.table.reads;

import dev.rolloutingest.table.rows.RolloutSchema;

/**
 * One of {@code count} disjoint shares of a table's rows for data-parallel readers: the keys whose newest row came
 * from an input partition {@code p} with {@code p % count == index}. A key's newest row has one partition, so readers
 * of the shares 0..count-1 of one read get every key once between them; a share holds its partitions for good, so each
 * reader tails its own share with its own cursor (partitions added to the topic later fall to a share too).
 *
 * @param index this share, from 0
 * @param count how many shares the readers split the table into (1 = every row)
 */
public record PartitionShare(int index, int count) {
    /** The most shares a read is split into (a topic has at most this many partitions). */
    public static final int MAX_COUNT = 10_000;

    public static final PartitionShare ALL = new PartitionShare(0, 1);

    public PartitionShare {
        if (count < 1 || count > MAX_COUNT) {
            throw new IllegalArgumentException("a share count must be between 1 and " + MAX_COUNT + ", was " + count);
        }
        if (index < 0 || index >= count) {
            throw new IllegalArgumentException(
                    "a share index must be between 0 and " + (count - 1) + " (of " + count + " shares), was " + index);
        }
    }

    /** A share written as {@code index/count} (for example {@code 2/8}), as requests carry it. */
    public static PartitionShare parse(String text) {
        int slash = text.indexOf('/');
        if (slash < 0) {
            throw new IllegalArgumentException("a share is index/count, for example 0/4; was '" + text + "'");
        }
        try {
            return new PartitionShare(
                    Integer.parseInt(text.substring(0, slash).trim()),
                    Integer.parseInt(text.substring(slash + 1).trim()));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(
                    "a share is index/count of whole numbers, for example 0/4; was '" + text + "'");
        }
    }

    public boolean all() {
        return count == 1;
    }

    public boolean holds(int partition) {
        return Math.floorMod(partition, count) == index;
    }

    /** The share as a Lance SQL predicate on a row's partition; null for every row. */
    String sql() {
        return all() ? null : RolloutSchema.SOURCE_PARTITION + " % " + count + " = " + index;
    }

    @Override
    public String toString() {
        return index + "/" + count;
    }
}
