package dev.rolloutingest.launcher;

import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.table.rows.RolloutRow;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A table row as JSON: every column, the payload as its size only (it is downloaded separately), then the
 * columns producers added, by name (bytes as base64, maps as objects).
 */
final class RowJson {
    private RowJson() {}

    static Map<String, Object> of(RolloutRow row) {
        Rollout r = row.rollout();
        Map<String, Object> json = new LinkedHashMap<>();
        json.put("record_id", r.getRecordId());
        json.put("experiment", r.getExperiment());
        json.put("rollout_id", r.getRolloutId());
        json.put("problem_id", r.getProblemId());
        json.put("sequence_order", r.getSequenceOrder());
        json.put("role", r.getRole());
        json.put("created_at", r.getCreatedAt().toString());
        json.put("content", r.getContent());
        json.put("input_tokens", r.getInputTokens());
        json.put("output_tokens", r.getOutputTokens());
        json.put("output_logprobs", r.getOutputLogprobs());
        json.put("reward", r.getReward());
        json.put("advantage", r.getAdvantage());
        json.put("policy_version", r.getPolicyVersion());
        json.put("include_in_training", r.getIncludeInTraining());
        json.put("metadata", r.getMetadata());
        json.put(
                "payload_bytes",
                r.getBinaryPayload() == null ? null : r.getBinaryPayload().remaining());
        json.put("source_partition", row.sourcePartition());
        json.put("source_offset", row.sourceOffset());
        json.put("ingested_at", row.ingestedAt().toString());
        json.putAll(row.added());
        return json;
    }
}
