package dev.rolloutingest.serde.values;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.core.json.JsonReadFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.avro.Schema;

/**
 * A JSON object mapped to the contract by field name, written to an {@link AvroTape}. A value of contract fields only,
 * well-formed, is read straight off its bytes ({@link ContractJsonScan}); any other by the parser: the contract's fields
 * from its tokens ({@link JsonFields}: no tree, no Strings but the metadata's), the fields it adds through a tree
 * (rare) after them. The rules, the same for plain JSON and JSON Schema values:
 * <ul>
 *   <li>a required field (record_id, experiment, rollout_id, sequence_order, role, created_at) absent or null: {@code
 *       missing-field}; another field absent or null takes the contract's default (null, [], {}, include_in_training
 *       true);
 *   <li>a field twice is {@code duplicate-field}; a value that is not one JSON object is {@code not-json}.
 * </ul>
 * A field beyond the contract is an added field ({@link AddedFields}): its type is the JSON Schema's declared one
 * when it has a simple one, else the value's own ({@link JsonAddedTypes}); its value is written by that type
 * ({@link JsonAddedValues}). A null or empty array leaves an added field null in its row.
 */
final class JsonValues {
    private static final JsonFactory FACTORY = JsonFactory.builder()
            .enable(JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS)
            // logprobs and rewards are floats: Jackson's bundled fast parser, correctly rounded like the JDK's
            .enable(StreamReadFeature.USE_FAST_DOUBLE_PARSER)
            .build();
    private static final ObjectMapper TREES = new ObjectMapper(FACTORY);

    private final AddedFields addedFields;

    /** The parser settings values are read with (and the encoders write with). */
    static JsonFactory factory() {
        return FACTORY;
    }

    JsonValues(AddedFields addedFields) {
        this.addedFields = addedFields;
    }

    /**
     * Writes the row of the JSON object in {@code bytes[offset, offset + length)} to {@code tape}: read by {@code
     * scan} straight off the bytes when it is of the shape producers write, else by the parser.
     *
     * @param declared the JSON Schema's types of fields beyond the contract (empty for plain JSON)
     * @param schemaId the value's schema id, {@link AddedFields#NO_SCHEMA_ID} for plain JSON
     */
    void read(
            byte[] bytes,
            int offset,
            int length,
            Map<String, Schema> declared,
            int schemaId,
            AvroTape tape,
            ContractJsonScan scan) {
        if (!scan.read(bytes, offset, length, tape)) {
            readByParser(bytes, offset, length, declared, schemaId, tape);
        }
    }

    /** {@link #read} by the parser alone: every value, whatever its shape. */
    void readByParser(byte[] bytes, int offset, int length, Map<String, Schema> declared, int schemaId, AvroTape tape) {
        tape.reset();
        int seen = 0;
        List<String> addedNames = null;
        List<JsonNode> addedValues = null;
        JsonFields.Input json = new JsonFields.Input(bytes, offset, offset + length);
        try (JsonParser in = FACTORY.createParser(bytes, offset, length)) {
            if (in.nextToken() != JsonToken.START_OBJECT) {
                throw ValueErrors.of(ValueErrors.NOT_JSON, "the value is JSON but not an object: " + in.currentToken());
            }
            for (JsonToken t = in.nextToken(); t == JsonToken.FIELD_NAME; t = in.nextToken()) {
                String name = in.currentName();
                ContractField field = ContractField.named(name);
                in.nextToken();
                if (field == null) {
                    if (addedNames == null) {
                        addedNames = new ArrayList<>();
                        addedValues = new ArrayList<>();
                    }
                    if (addedNames.contains(name)) {
                        throw ValueErrors.of(ValueErrors.DUPLICATE_FIELD, "field " + name + " comes twice");
                    }
                    addedNames.add(name);
                    addedValues.add(addedFields.keep() ? TREES.readTree(in) : null);
                    if (!addedFields.keep()) {
                        in.skipChildren();
                    }
                    continue;
                }
                int bit = 1 << field.ordinal();
                if ((seen & bit) != 0) {
                    throw ValueErrors.of(ValueErrors.DUPLICATE_FIELD, "field " + name + " comes twice");
                }
                seen |= bit;
                if (in.currentToken() == JsonToken.VALUE_NULL) {
                    field.writeAbsent("null", tape);
                    continue;
                }
                tape.field(field.field);
                JsonFields.read(in, json, field, tape);
            }
            if (in.currentToken() != JsonToken.END_OBJECT) {
                throw ValueErrors.of(ValueErrors.NOT_JSON, "the object is not closed");
            }
            if (in.nextToken() != null) {
                throw ValueErrors.of(ValueErrors.NOT_JSON, "the value has more after its object: " + in.currentToken());
            }
        } catch (JsonProcessingException e) {
            throw ValueErrors.of(ValueErrors.NOT_JSON, "the value is not JSON: " + e.getOriginalMessage(), e);
        } catch (IOException e) {
            throw ValueErrors.of(ValueErrors.NOT_JSON, "the value is not JSON: " + e, e);
        }
        for (ContractField field : ContractField.ALL) {
            if ((seen & (1 << field.ordinal())) == 0) {
                field.writeAbsent("absent", tape);
            }
        }
        if (addedNames != null) {
            if (addedFields.keep()) {
                for (int i = 0; i < addedNames.size(); i++) {
                    added(addedNames.get(i), addedValues.get(i), declared.get(addedNames.get(i)), schemaId, tape);
                }
            } else {
                addedFields.dropped(schemaId, addedNames);
            }
        }
    }

    private void added(String name, JsonNode value, Schema declared, int schemaId, AvroTape tape) {
        if (value == null || value.isNull() || value.isArray() && value.isEmpty()) {
            return; // no type to give a column: the row's value of the field is null
        }
        Schema type = declared != null ? declared : JsonAddedTypes.infer(name, value);
        tape.field(addedFields.field(schemaId, name, type));
        JsonAddedValues.encode(value, type, name, tape);
    }
}
