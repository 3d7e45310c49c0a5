package dev.rolloutingest.serde;

import com.google.protobuf.DescriptorProtos.DescriptorProto;
import com.google.protobuf.DescriptorProtos.EnumDescriptorProto;
import com.google.protobuf.DescriptorProtos.EnumValueDescriptorProto;
import com.google.protobuf.DescriptorProtos.FieldDescriptorProto;
import com.google.protobuf.DescriptorProtos.FieldOptions;
import com.google.protobuf.DescriptorProtos.FileDescriptorProto;
import com.google.protobuf.DescriptorProtos.MessageOptions;
import com.google.protobuf.DescriptorProtos.OneofDescriptorProto;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A {@code .proto} file's text (what Confluent's Java serializer registers) as the {@link FileDescriptorProto} that
 * protoc would make of it, for protobuf-java to build descriptors from: syntax, package, imports, messages (nested,
 * with oneofs, maps, proto2 groups and proto3 {@code optional}) and enums. Options, reserved ranges, extensions,
 * services and {@code extend} blocks are read past; type names are left for protobuf-java to resolve by protoc's
 * scoping rules. Any text it cannot read, however cut or garbled, is an IllegalArgumentException naming the line.
 * The text's tokens come from {@link ProtoTokens}; this class holds protoc's grammar and layout of descriptors.
 *
 * <p>Over 300 lines because protoc's grammar is one recursive descent: the statements of a file, a message, its fields
 * (plain, map, group, oneof) and an enum call one another, each laying out its part of the descriptor as protoc does.
 */
final class ProtoText {
    private static final Map<String, FieldDescriptorProto.Type> SCALARS = Map.ofEntries(
            Map.entry("double", FieldDescriptorProto.Type.TYPE_DOUBLE),
            Map.entry("float", FieldDescriptorProto.Type.TYPE_FLOAT),
            Map.entry("int64", FieldDescriptorProto.Type.TYPE_INT64),
            Map.entry("uint64", FieldDescriptorProto.Type.TYPE_UINT64),
            Map.entry("int32", FieldDescriptorProto.Type.TYPE_INT32),
            Map.entry("fixed64", FieldDescriptorProto.Type.TYPE_FIXED64),
            Map.entry("fixed32", FieldDescriptorProto.Type.TYPE_FIXED32),
            Map.entry("bool", FieldDescriptorProto.Type.TYPE_BOOL),
            Map.entry("string", FieldDescriptorProto.Type.TYPE_STRING),
            Map.entry("bytes", FieldDescriptorProto.Type.TYPE_BYTES),
            Map.entry("uint32", FieldDescriptorProto.Type.TYPE_UINT32),
            Map.entry("sfixed32", FieldDescriptorProto.Type.TYPE_SFIXED32),
            Map.entry("sfixed64", FieldDescriptorProto.Type.TYPE_SFIXED64),
            Map.entry("sint32", FieldDescriptorProto.Type.TYPE_SINT32),
            Map.entry("sint64", FieldDescriptorProto.Type.TYPE_SINT64));

    /** Messages nested deeper are refused: protobuf-java reads no deeper (its recursion limit is 100). */
    static final int MAX_NESTING = 64;

    private final ProtoTokens tokens;
    private boolean proto3;

    private ProtoText(String text) {
        this.tokens = new ProtoTokens(text);
    }

    /** The file; IllegalArgumentException with the line for text it cannot read. */
    static FileDescriptorProto parse(String name, String text) {
        return new ProtoText(text).file(name);
    }

    private FileDescriptorProto file(String name) {
        FileDescriptorProto.Builder file = FileDescriptorProto.newBuilder().setName(name);
        for (String token = tokens.next(); token != null; token = tokens.next()) {
            switch (token) {
                case "syntax" -> {
                    tokens.expect("=");
                    String syntax = tokens.string();
                    tokens.expect(";");
                    proto3 = syntax.equals("proto3");
                    if (proto3) {
                        file.setSyntax("proto3");
                    } else if (!syntax.equals("proto2")) {
                        throw tokens.error("syntax " + syntax + " is not proto2 or proto3");
                    }
                }
                case "edition" -> throw tokens.error("editions are not read, only proto2 and proto3 syntax");
                case "package" -> {
                    file.setPackage(tokens.word("a package name"));
                    tokens.expect(";");
                }
                case "import" -> {
                    String path = tokens.peekIsString() ? tokens.string() : skipWord(); // public / weak
                    if (path == null) {
                        path = tokens.string();
                    }
                    file.addDependency(path);
                    tokens.expect(";");
                }
                case "option" -> tokens.skipStatement();
                case "message" -> file.addMessageType(message(tokens.word("a message name"), 1));
                case "enum" -> file.addEnumType(enumType(tokens.word("an enum name")));
                case "service", "extend" -> {
                    tokens.word("a name");
                    tokens.skipBlock();
                }
                case ";" -> {}
                default -> throw tokens.error("unexpected '" + token + "'");
            }
        }
        return file.build();
    }

    private DescriptorProto message(String name, int depth) {
        DescriptorProto.Builder message = DescriptorProto.newBuilder().setName(name);
        tokens.expect("{");
        body(message, depth);
        return message.build();
    }

    /** A message's statements, after its '{' up to its '}'. */
    private void body(DescriptorProto.Builder message, int depth) {
        if (depth > MAX_NESTING) {
            throw tokens.error("messages nest deeper than " + MAX_NESTING);
        }
        String name = message.getName();
        List<Integer> optionalFields = new ArrayList<>(); // proto3 optional: their indexes among the fields
        for (String token = tokens.next(); !"}".equals(token); token = tokens.next()) {
            if (token == null) {
                throw tokens.error("message " + name + " is not closed");
            }
            switch (token) {
                case "message" -> message.addNestedType(message(tokens.word("a message name"), depth + 1));
                case "enum" -> message.addEnumType(enumType(tokens.word("an enum name")));
                case "option", "reserved", "extensions" -> tokens.skipStatement();
                case "extend" -> {
                    tokens.word("a name");
                    tokens.skipBlock();
                }
                case "oneof" -> {
                    int index = message.getOneofDeclCount();
                    message.addOneofDecl(OneofDescriptorProto.newBuilder().setName(tokens.word("a oneof name")));
                    tokens.expect("{");
                    for (String t = tokens.next(); !"}".equals(t); t = tokens.next()) {
                        if (t == null) {
                            throw tokens.error("oneof is not closed");
                        }
                        if (t.equals("option")) {
                            tokens.skipStatement();
                            continue;
                        }
                        if (t.equals("group")) {
                            message.addField(group(message, null, depth).setOneofIndex(index));
                            continue;
                        }
                        message.addField(field(typeName(t)).setOneofIndex(index));
                    }
                }
                case ";" -> {}
                case "map" -> message.addField(map(message));
                case "group" -> message.addField(group(message, null, depth));
                default -> {
                    String label = null;
                    String type = token;
                    if (token.equals("optional") || token.equals("required") || token.equals("repeated")) {
                        label = token;
                        type = tokens.word("a type");
                    }
                    if (type.equals("map")) {
                        message.addField(map(message));
                        continue;
                    }
                    if (type.equals("group")) {
                        message.addField(group(message, label, depth));
                        continue;
                    }
                    FieldDescriptorProto.Builder field = field(typeName(type)).setLabel(label(label));
                    if (proto3 && "optional".equals(label)) {
                        field.setProto3Optional(true);
                        optionalFields.add(message.getFieldCount());
                    }
                    message.addField(field);
                }
            }
        }
        // protoc puts proto3 optional fields in synthetic oneofs after the real ones
        for (int field : optionalFields) {
            int index = message.getOneofDeclCount();
            FieldDescriptorProto.Builder optional = message.getFieldBuilder(field);
            message.addOneofDecl(OneofDescriptorProto.newBuilder().setName("_" + optional.getName()));
            optional.setOneofIndex(index);
        }
    }

    private static FieldDescriptorProto.Label label(String label) {
        return "repeated".equals(label)
                ? FieldDescriptorProto.Label.LABEL_REPEATED
                : "required".equals(label)
                        ? FieldDescriptorProto.Label.LABEL_REQUIRED
                        : FieldDescriptorProto.Label.LABEL_OPTIONAL;
    }

    /** A type name where a field starts: a word, not a symbol. */
    private String typeName(String token) {
        if (!ProtoTokens.isWord(token)) {
            throw tokens.error("unexpected '" + token + "'");
        }
        return token;
    }

    /**
     * {@code group Name = N { ... }} as protoc writes it: a nested message Name and a field of type group named
     * name in lower case.
     */
    private FieldDescriptorProto.Builder group(DescriptorProto.Builder message, String label, int depth) {
        String name = tokens.word("a group name");
        tokens.expect("=");
        FieldDescriptorProto.Builder field = FieldDescriptorProto.newBuilder()
                .setName(name.toLowerCase(java.util.Locale.ROOT))
                .setLabel(label(label))
                .setType(FieldDescriptorProto.Type.TYPE_GROUP)
                .setTypeName(name)
                .setNumber(tokens.number());
        String token = tokens.next();
        if ("[".equals(token)) {
            tokens.skipBracketed();
            token = tokens.next();
        }
        if (!"{".equals(token)) {
            throw tokens.error("expected '{' after group " + name + ", got '" + token + "'");
        }
        DescriptorProto.Builder type = DescriptorProto.newBuilder().setName(name);
        body(type, depth + 1);
        message.addNestedType(type);
        return field;
    }

    private FieldDescriptorProto.Builder field(String type) {
        FieldDescriptorProto.Builder field = FieldDescriptorProto.newBuilder()
                .setName(tokens.word("a field name"))
                .setLabel(FieldDescriptorProto.Label.LABEL_OPTIONAL);
        FieldDescriptorProto.Type scalar = SCALARS.get(type);
        if (scalar != null) {
            field.setType(scalar);
        } else {
            field.setTypeName(type);
        }
        tokens.expect("=");
        field.setNumber(tokens.number());
        fieldOptions(field);
        return field;
    }

    /** {@code map<K, V> name = N;} as protoc writes it: a repeated field of a nested NameEntry message. */
    private FieldDescriptorProto.Builder map(DescriptorProto.Builder message) {
        tokens.expect("<");
        String key = tokens.word("a map key type");
        tokens.expect(",");
        String value = tokens.word("a map value type");
        tokens.expect(">");
        String name = tokens.word("a map name");
        StringBuilder entry = new StringBuilder();
        boolean upper = true;
        for (char c : name.toCharArray()) {
            if (c == '_') {
                upper = true;
            } else {
                entry.append(upper ? Character.toUpperCase(c) : c);
                upper = false;
            }
        }
        entry.append("Entry");
        DescriptorProto.Builder entryType = DescriptorProto.newBuilder()
                .setName(entry.toString())
                .setOptions(MessageOptions.newBuilder().setMapEntry(true));
        entryType.addField(entryField("key", 1, key));
        entryType.addField(entryField("value", 2, value));
        message.addNestedType(entryType);
        FieldDescriptorProto.Builder field = FieldDescriptorProto.newBuilder()
                .setName(name)
                .setLabel(FieldDescriptorProto.Label.LABEL_REPEATED)
                .setTypeName(entry.toString());
        tokens.expect("=");
        field.setNumber(tokens.number());
        fieldOptions(field);
        return field;
    }

    private static FieldDescriptorProto entryField(String name, int number, String type) {
        FieldDescriptorProto.Builder field = FieldDescriptorProto.newBuilder()
                .setName(name)
                .setNumber(number)
                .setLabel(FieldDescriptorProto.Label.LABEL_OPTIONAL);
        FieldDescriptorProto.Type scalar = SCALARS.get(type);
        return (scalar != null ? field.setType(scalar) : field.setTypeName(type)).build();
    }

    /** {@code [packed = false, json_name = "x", ...];}: packed kept, the others read past. */
    private void fieldOptions(FieldDescriptorProto.Builder field) {
        String token = tokens.next();
        if ("[".equals(token)) {
            int depth = 1;
            while (depth > 0) {
                String t = tokens.next();
                if (t == null) {
                    throw tokens.error("field options are not closed");
                }
                if (t.equals("[")) {
                    depth++;
                } else if (t.equals("]")) {
                    depth--;
                } else if (t.equals("packed") && depth == 1) {
                    tokens.expect("=");
                    field.setOptions(FieldOptions.newBuilder()
                            .setPacked(tokens.word("true or false").equals("true")));
                }
            }
            token = tokens.next();
        }
        if (!";".equals(token)) {
            throw tokens.error("expected ';' after field " + field.getName() + ", got '" + token + "'");
        }
    }

    private EnumDescriptorProto enumType(String name) {
        EnumDescriptorProto.Builder type = EnumDescriptorProto.newBuilder().setName(name);
        tokens.expect("{");
        for (String token = tokens.next(); !"}".equals(token); token = tokens.next()) {
            if (token == null) {
                throw tokens.error("enum " + name + " is not closed");
            }
            if (token.equals("option") || token.equals("reserved")) {
                tokens.skipStatement();
                continue;
            }
            if (token.equals(";")) {
                continue;
            }
            tokens.expect("=");
            int number = tokens.number();
            type.addValue(EnumValueDescriptorProto.newBuilder()
                    .setName(typeName(token))
                    .setNumber(number));
            String t = tokens.next();
            if ("[".equals(t)) {
                tokens.skipBracketed();
                t = tokens.next();
            }
            if (!";".equals(t)) {
                throw tokens.error("expected ';' after enum value " + token);
            }
        }
        return type.build();
    }

    private String skipWord() {
        tokens.word("public or weak");
        return null;
    }
}
