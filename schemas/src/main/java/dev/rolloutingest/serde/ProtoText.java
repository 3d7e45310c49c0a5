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

    private final String text;
    private int pos;
    private boolean proto3;

    private ProtoText(String text) {
        this.text = text;
    }

    /** The file; IllegalArgumentException with the line for text it cannot read. */
    static FileDescriptorProto parse(String name, String text) {
        return new ProtoText(text).file(name);
    }

    private FileDescriptorProto file(String name) {
        FileDescriptorProto.Builder file = FileDescriptorProto.newBuilder().setName(name);
        for (String token = next(); token != null; token = next()) {
            switch (token) {
                case "syntax" -> {
                    expect("=");
                    String syntax = string();
                    expect(";");
                    proto3 = syntax.equals("proto3");
                    if (proto3) {
                        file.setSyntax("proto3");
                    } else if (!syntax.equals("proto2")) {
                        throw error("syntax " + syntax + " is not proto2 or proto3");
                    }
                }
                case "edition" -> throw error("editions are not read, only proto2 and proto3 syntax");
                case "package" -> {
                    file.setPackage(word("a package name"));
                    expect(";");
                }
                case "import" -> {
                    String path = peekIsString() ? string() : skipWord(); // public / weak
                    if (path == null) {
                        path = string();
                    }
                    file.addDependency(path);
                    expect(";");
                }
                case "option" -> skipStatement();
                case "message" -> file.addMessageType(message(word("a message name"), 1));
                case "enum" -> file.addEnumType(enumType(word("an enum name")));
                case "service", "extend" -> {
                    word("a name");
                    skipBlock();
                }
                case ";" -> {}
                default -> throw error("unexpected '" + token + "'");
            }
        }
        return file.build();
    }

    private DescriptorProto message(String name, int depth) {
        DescriptorProto.Builder message = DescriptorProto.newBuilder().setName(name);
        expect("{");
        body(message, depth);
        return message.build();
    }

    /** A message's statements, after its '{' up to its '}'. */
    private void body(DescriptorProto.Builder message, int depth) {
        if (depth > MAX_NESTING) {
            throw error("messages nest deeper than " + MAX_NESTING);
        }
        String name = message.getName();
        List<Integer> optionalFields = new ArrayList<>(); // proto3 optional: their indexes among the fields
        for (String token = next(); !"}".equals(token); token = next()) {
            if (token == null) {
                throw error("message " + name + " is not closed");
            }
            switch (token) {
                case "message" -> message.addNestedType(message(word("a message name"), depth + 1));
                case "enum" -> message.addEnumType(enumType(word("an enum name")));
                case "option", "reserved", "extensions" -> skipStatement();
                case "extend" -> {
                    word("a name");
                    skipBlock();
                }
                case "oneof" -> {
                    int index = message.getOneofDeclCount();
                    message.addOneofDecl(OneofDescriptorProto.newBuilder().setName(word("a oneof name")));
                    expect("{");
                    for (String t = next(); !"}".equals(t); t = next()) {
                        if (t == null) {
                            throw error("oneof is not closed");
                        }
                        if (t.equals("option")) {
                            skipStatement();
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
                        type = word("a type");
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
        if (!isWord(token)) {
            throw error("unexpected '" + token + "'");
        }
        return token;
    }

    /**
     * {@code group Name = N { ... }} as protoc writes it: a nested message Name and a field of type group named
     * name in lower case.
     */
    private FieldDescriptorProto.Builder group(DescriptorProto.Builder message, String label, int depth) {
        String name = word("a group name");
        expect("=");
        FieldDescriptorProto.Builder field = FieldDescriptorProto.newBuilder()
                .setName(name.toLowerCase(java.util.Locale.ROOT))
                .setLabel(label(label))
                .setType(FieldDescriptorProto.Type.TYPE_GROUP)
                .setTypeName(name)
                .setNumber(number());
        String token = next();
        if ("[".equals(token)) {
            skipBracketed();
            token = next();
        }
        if (!"{".equals(token)) {
            throw error("expected '{' after group " + name + ", got '" + token + "'");
        }
        DescriptorProto.Builder type = DescriptorProto.newBuilder().setName(name);
        body(type, depth + 1);
        message.addNestedType(type);
        return field;
    }

    private FieldDescriptorProto.Builder field(String type) {
        FieldDescriptorProto.Builder field = FieldDescriptorProto.newBuilder()
                .setName(word("a field name"))
                .setLabel(FieldDescriptorProto.Label.LABEL_OPTIONAL);
        FieldDescriptorProto.Type scalar = SCALARS.get(type);
        if (scalar != null) {
            field.setType(scalar);
        } else {
            field.setTypeName(type);
        }
        expect("=");
        field.setNumber(number());
        fieldOptions(field);
        return field;
    }

    /** {@code map<K, V> name = N;} as protoc writes it: a repeated field of a nested NameEntry message. */
    private FieldDescriptorProto.Builder map(DescriptorProto.Builder message) {
        expect("<");
        String key = word("a map key type");
        expect(",");
        String value = word("a map value type");
        expect(">");
        String name = word("a map name");
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
        expect("=");
        field.setNumber(number());
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
        String token = next();
        if ("[".equals(token)) {
            int depth = 1;
            while (depth > 0) {
                String t = next();
                if (t == null) {
                    throw error("field options are not closed");
                }
                if (t.equals("[")) {
                    depth++;
                } else if (t.equals("]")) {
                    depth--;
                } else if (t.equals("packed") && depth == 1) {
                    expect("=");
                    field.setOptions(FieldOptions.newBuilder()
                            .setPacked(word("true or false").equals("true")));
                }
            }
            token = next();
        }
        if (!";".equals(token)) {
            throw error("expected ';' after field " + field.getName() + ", got '" + token + "'");
        }
    }

    private EnumDescriptorProto enumType(String name) {
        EnumDescriptorProto.Builder type = EnumDescriptorProto.newBuilder().setName(name);
        expect("{");
        for (String token = next(); !"}".equals(token); token = next()) {
            if (token == null) {
                throw error("enum " + name + " is not closed");
            }
            if (token.equals("option") || token.equals("reserved")) {
                skipStatement();
                continue;
            }
            if (token.equals(";")) {
                continue;
            }
            expect("=");
            int number = number();
            type.addValue(EnumValueDescriptorProto.newBuilder()
                    .setName(typeName(token))
                    .setNumber(number));
            String t = next();
            if ("[".equals(t)) {
                skipBracketed();
                t = next();
            }
            if (!";".equals(t)) {
                throw error("expected ';' after enum value " + token);
            }
        }
        return type.build();
    }

    private int number() {
        String token = next();
        boolean negative = "-".equals(token);
        if (negative) {
            token = next();
        }
        if (token == null) {
            throw error("expected a number, got the end of the text");
        }
        try {
            long value = token.startsWith("0x") || token.startsWith("0X")
                    ? Long.parseLong(token.substring(2), 16)
                    : Long.parseLong(token);
            return Math.toIntExact(negative ? -value : value);
        } catch (NumberFormatException | ArithmeticException e) {
            throw error("expected a number, got '" + token + "'");
        }
    }

    /** Past the ']' that closes a '[' just read. */
    private void skipBracketed() {
        int depth = 1;
        while (depth > 0) {
            String t = next();
            if (t == null) {
                throw error("options are not closed");
            }
            depth += t.equals("[") ? 1 : t.equals("]") ? -1 : 0;
        }
    }

    private void skipStatement() {
        int depth = 0;
        for (String t = next(); t != null; t = next()) {
            if (t.equals("{")) {
                depth++;
            } else if (t.equals("}")) {
                depth--;
            } else if (t.equals(";") && depth == 0) {
                return;
            }
        }
    }

    private void skipBlock() {
        expect("{");
        int depth = 1;
        while (depth > 0) {
            String t = next();
            if (t == null) {
                throw error("block is not closed");
            }
            depth += t.equals("{") ? 1 : t.equals("}") ? -1 : 0;
        }
    }

    private String skipWord() {
        word("public or weak");
        return null;
    }

    /** The next token, which must be a name (or a number, or true/false): an error names what was expected. */
    private String word(String what) {
        String token = next();
        if (!isWord(token)) {
            throw error("expected " + what + ", got " + (token == null ? "the end of the text" : "'" + token + "'"));
        }
        return token;
    }

    private static boolean isWord(String token) {
        if (token == null || token.isEmpty()) {
            return false;
        }
        char c = token.charAt(0);
        return Character.isLetterOrDigit(c) || c == '_' || c == '.';
    }

    private void expect(String wanted) {
        String token = next();
        if (!wanted.equals(token)) {
            throw error("expected '" + wanted + "', got '" + token + "'");
        }
    }

    private boolean peekIsString() {
        skipSpace();
        return pos < text.length() && (text.charAt(pos) == '"' || text.charAt(pos) == '\'');
    }

    private String string() {
        String token = next();
        if (token == null || token.length() < 2 || token.charAt(0) != '"' && token.charAt(0) != '\'') {
            throw error("expected a string, got '" + token + "'");
        }
        return token.substring(1, token.length() - 1);
    }

    /** The next token: a word (letters, digits, _ and .), a quoted string with its quotes, or one symbol. */
    private String next() {
        skipSpace();
        if (pos >= text.length()) {
            return null;
        }
        char c = text.charAt(pos);
        int start = pos;
        if (c == '"' || c == '\'') {
            pos++;
            while (pos < text.length() && text.charAt(pos) != c) {
                pos += text.charAt(pos) == '\\' ? 2 : 1;
            }
            pos++;
            return text.substring(start, Math.min(pos, text.length()));
        }
        if (Character.isLetterOrDigit(c) || c == '_' || c == '.') {
            while (pos < text.length()
                    && (Character.isLetterOrDigit(text.charAt(pos))
                            || text.charAt(pos) == '_'
                            || text.charAt(pos) == '.')) {
                pos++;
            }
            return text.substring(start, pos);
        }
        pos++;
        return String.valueOf(c);
    }

    private void skipSpace() {
        while (pos < text.length()) {
            char c = text.charAt(pos);
            if (Character.isWhitespace(c)) {
                pos++;
            } else if (text.startsWith("//", pos)) {
                int end = text.indexOf('\n', pos);
                pos = end < 0 ? text.length() : end + 1;
            } else if (text.startsWith("/*", pos)) {
                int end = text.indexOf("*/", pos + 2);
                pos = end < 0 ? text.length() : end + 2;
            } else {
                return;
            }
        }
    }

    private IllegalArgumentException error(String what) {
        int line = 1;
        for (int i = 0; i < Math.min(pos, text.length()); i++) {
            if (text.charAt(i) == '\n') {
                line++;
            }
        }
        return new IllegalArgumentException("line " + line + ": " + what);
    }
}
