package dev.rolloutingest.table.rows;

import static dev.rolloutingest.table.rows.RolloutSchema.*;

import dev.rolloutingest.schemas.Rollout;
import org.apache.avro.Schema;

/**
 * The Rollout reader schema's field positions, as {@link RowWriter#decode}'s switch needs constants, and their check
 * against the contract. {@link RowWriter} runs the check when it loads: a schema change that moves a field or a
 * union's null branch must fail there, not decode wrong columns.
 */
final class ContractFields {
    static final int F_RECORD_ID = 0;
    static final int F_EXPERIMENT = 1;
    static final int F_ROLLOUT_ID = 2;
    static final int F_PROBLEM_ID = 3;
    static final int F_SEQUENCE_ORDER = 4;
    static final int F_ROLE = 5;
    static final int F_CREATED_AT = 6;
    static final int F_CONTENT = 7;
    static final int F_INPUT_TOKENS = 8;
    static final int F_OUTPUT_TOKENS = 9;
    static final int F_OUTPUT_LOGPROBS = 10;
    static final int F_REWARD = 11;
    static final int F_ADVANTAGE = 12;
    static final int F_POLICY_VERSION = 13;
    static final int F_INCLUDE_IN_TRAINING = 14;
    static final int F_METADATA = 15;
    static final int F_BINARY_PAYLOAD = 16;
    /** Reader fields at this position and above are fields producers added (see AddedColumns). */
    static final int CONTRACT_FIELDS = 17;

    private ContractFields() {}

    /** Throws (an {@link ExceptionInInitializerError}, for the class loading it) unless the schema has these fields. */
    static void check() {
        Schema avro = Rollout.getClassSchema();
        String[] names = {
            RECORD_ID,
            EXPERIMENT,
            ROLLOUT_ID,
            PROBLEM_ID,
            SEQUENCE_ORDER,
            ROLE,
            CREATED_AT,
            CONTENT,
            INPUT_TOKENS,
            OUTPUT_TOKENS,
            OUTPUT_LOGPROBS,
            REWARD,
            ADVANTAGE,
            POLICY_VERSION,
            INCLUDE_IN_TRAINING,
            METADATA,
            BINARY_PAYLOAD
        };
        if (avro.getFields().size() != names.length || names.length != CONTRACT_FIELDS) {
            throw new ExceptionInInitializerError(
                    "Rollout has " + avro.getFields().size() + " fields, the decoder " + names.length);
        }
        for (int pos = 0; pos < names.length; pos++) {
            Schema.Field field = avro.getFields().get(pos);
            if (!field.name().equals(names[pos])) {
                throw new ExceptionInInitializerError(
                        "Rollout field " + pos + " is " + field.name() + ", the decoder" + " expects " + names[pos]);
            }
            Schema type = field.schema();
            if (type.getType() == Schema.Type.UNION
                    && (type.getTypes().size() != 2 || type.getTypes().get(0).getType() != Schema.Type.NULL)) {
                throw new ExceptionInInitializerError("Rollout field " + field.name() + " is not [null, T]");
            }
        }
    }
}
