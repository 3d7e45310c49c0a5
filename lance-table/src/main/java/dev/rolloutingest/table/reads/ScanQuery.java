package dev.rolloutingest.table.reads;

import dev.rolloutingest.table.rows.Filters;
import dev.rolloutingest.table.rows.RolloutSchema;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * A bulk read for training: which columns, which rows (filters pushed down to lance as SQL), how many rows at most,
 * and how many rows an Arrow batch holds. Filters apply to each key's newest value, so a replaced value never matches.
 *
 * @param columns the columns of the answer in this order; empty = every column of the table
 * @param experiment only this experiment (null = any)
 * @param minPolicyVersion only rows with policy_version at least this (null = no bound)
 * @param maxPolicyVersion only rows with policy_version at most this
 * @param minReward only rows with reward at least this
 * @param maxReward only rows with reward at most this
 * @param includeInTraining only rows whose include_in_training is this
 * @param createdFrom only rows created at or after this
 * @param createdBefore only rows created before this
 * @param limit the most rows of the answer (0 = every row)
 * @param batchRows rows per Arrow batch (0 = the table's setting); at most the table's setting
 * @param share which share of the keys, by the partition of their newest row, for one of several data-parallel
 *     readers ({@link PartitionShare#ALL} = every key)
 */
public record ScanQuery(
        List<String> columns,
        String experiment,
        Long minPolicyVersion,
        Long maxPolicyVersion,
        Double minReward,
        Double maxReward,
        Boolean includeInTraining,
        Instant createdFrom,
        Instant createdBefore,
        long limit,
        int batchRows,
        PartitionShare share) {

    public ScanQuery {
        share = share == null ? PartitionShare.ALL : share;
        columns = List.copyOf(columns);
        if (limit < 0) {
            throw new IllegalArgumentException("limit must be >= 0 (0 = every row), was " + limit);
        }
        if (batchRows < 0) {
            throw new IllegalArgumentException("batch rows must be >= 0, was " + batchRows);
        }
        if (minPolicyVersion != null && maxPolicyVersion != null && minPolicyVersion > maxPolicyVersion) {
            throw new IllegalArgumentException(
                    "policy_version range is empty: " + minPolicyVersion + " > " + maxPolicyVersion);
        }
        if (minReward != null && maxReward != null && minReward > maxReward) {
            throw new IllegalArgumentException("reward range is empty: " + minReward + " > " + maxReward);
        }
        for (Double bound : new Double[] {minReward, maxReward}) {
            if (bound != null && !Double.isFinite(bound)) {
                throw new IllegalArgumentException("a reward bound must be a finite number, was " + bound);
            }
        }
        if (createdFrom != null && createdBefore != null && !createdFrom.isBefore(createdBefore)) {
            throw new IllegalArgumentException(
                    "created_at range is empty: from " + createdFrom + " is not before " + createdBefore);
        }
    }

    /** Every row, every column. */
    public static ScanQuery all() {
        return new ScanQuery(List.of(), null, null, null, null, null, null, null, null, 0, 0, PartitionShare.ALL);
    }

    public ScanQuery withColumns(List<String> value) {
        return with(q -> q.columns = value);
    }

    public ScanQuery withExperiment(String value) {
        return with(q -> q.experiment = value);
    }

    public ScanQuery withPolicyVersions(Long min, Long max) {
        return with(q -> {
            q.minPolicyVersion = min;
            q.maxPolicyVersion = max;
        });
    }

    public ScanQuery withRewards(Double min, Double max) {
        return with(q -> {
            q.minReward = min;
            q.maxReward = max;
        });
    }

    public ScanQuery withIncludeInTraining(Boolean value) {
        return with(q -> q.includeInTraining = value);
    }

    public ScanQuery withCreated(Instant from, Instant before) {
        return with(q -> {
            q.createdFrom = from;
            q.createdBefore = before;
        });
    }

    public ScanQuery withLimit(long value) {
        return with(q -> q.limit = value);
    }

    public ScanQuery withBatchRows(int value) {
        return with(q -> q.batchRows = value);
    }

    public ScanQuery withShare(PartitionShare value) {
        return with(q -> q.share = value);
    }

    /** A copy of this query with some of its parts changed: each wither names only what it changes. */
    private ScanQuery with(Consumer<Parts> change) {
        Parts q = new Parts(this);
        change.accept(q);
        return new ScanQuery(
                q.columns,
                q.experiment,
                q.minPolicyVersion,
                q.maxPolicyVersion,
                q.minReward,
                q.maxReward,
                q.includeInTraining,
                q.createdFrom,
                q.createdBefore,
                q.limit,
                q.batchRows,
                q.share);
    }

    /** The parts of a query while a copy of it is changed. */
    private static final class Parts {
        List<String> columns;
        String experiment;
        Long minPolicyVersion;
        Long maxPolicyVersion;
        Double minReward;
        Double maxReward;
        Boolean includeInTraining;
        Instant createdFrom;
        Instant createdBefore;
        long limit;
        int batchRows;
        PartitionShare share;

        Parts(ScanQuery query) {
            columns = query.columns;
            experiment = query.experiment;
            minPolicyVersion = query.minPolicyVersion;
            maxPolicyVersion = query.maxPolicyVersion;
            minReward = query.minReward;
            maxReward = query.maxReward;
            includeInTraining = query.includeInTraining;
            createdFrom = query.createdFrom;
            createdBefore = query.createdBefore;
            limit = query.limit;
            batchRows = query.batchRows;
            share = query.share;
        }
    }

    /**
     * The filters as one Lance SQL predicate; null when there is none. The share is not among them: a scan adds it as
     * a filter of the newest rows, a tail reads its share's partitions only (deletes included).
     */
    public String sqlFilter() {
        List<String> terms = new ArrayList<>();
        if (experiment != null) {
            terms.add(RolloutSchema.EXPERIMENT + " = " + Filters.string(experiment));
        }
        if (minPolicyVersion != null) {
            terms.add(RolloutSchema.POLICY_VERSION + " >= " + minPolicyVersion);
        }
        if (maxPolicyVersion != null) {
            terms.add(RolloutSchema.POLICY_VERSION + " <= " + maxPolicyVersion);
        }
        // reward is float32: compare in float32, so a bound equal to a stored value matches it
        if (minReward != null) {
            terms.add(RolloutSchema.REWARD + " >= arrow_cast(" + minReward + ", 'Float32')");
        }
        if (maxReward != null) {
            terms.add(RolloutSchema.REWARD + " <= arrow_cast(" + maxReward + ", 'Float32')");
        }
        if (includeInTraining != null) {
            terms.add(RolloutSchema.INCLUDE_IN_TRAINING + " = " + includeInTraining);
        }
        if (createdFrom != null) {
            terms.add(RolloutSchema.CREATED_AT + " >= " + Filters.timestamp(createdFrom));
        }
        if (createdBefore != null) {
            terms.add(RolloutSchema.CREATED_AT + " < " + Filters.timestamp(createdBefore));
        }
        return terms.isEmpty() ? null : String.join(" AND ", terms);
    }
}
