package dev.rolloutingest.serde;

/**
 * The tokens of a {@code .proto} file's text for {@link ProtoText}: words, quoted strings and symbols, comments and
 * whitespace read past, and the errors that name the line the reading stopped at.
 */
final class ProtoTokens {
    private final String text;
    private int pos;

    ProtoTokens(String text) {
        this.text = text;
    }

    /** An int, decimal or 0x hex, after an optional '-' token. */
    int number() {
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
    void skipBracketed() {
        int depth = 1;
        while (depth > 0) {
            String t = next();
            if (t == null) {
                throw error("options are not closed");
            }
            depth += t.equals("[") ? 1 : t.equals("]") ? -1 : 0;
        }
    }

    void skipStatement() {
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

    void skipBlock() {
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

    /** The next token, which must be a name (or a number, or true/false): an error names what was expected. */
    String word(String what) {
        String token = next();
        if (!isWord(token)) {
            throw error("expected " + what + ", got " + (token == null ? "the end of the text" : "'" + token + "'"));
        }
        return token;
    }

    static boolean isWord(String token) {
        if (token == null || token.isEmpty()) {
            return false;
        }
        char c = token.charAt(0);
        return Character.isLetterOrDigit(c) || c == '_' || c == '.';
    }

    void expect(String wanted) {
        String token = next();
        if (!wanted.equals(token)) {
            throw error("expected '" + wanted + "', got '" + token + "'");
        }
    }

    boolean peekIsString() {
        skipSpace();
        return pos < text.length() && (text.charAt(pos) == '"' || text.charAt(pos) == '\'');
    }

    String string() {
        String token = next();
        if (token == null || token.length() < 2 || token.charAt(0) != '"' && token.charAt(0) != '\'') {
            throw error("expected a string, got '" + token + "'");
        }
        return token.substring(1, token.length() - 1);
    }

    /** The next token: a word (letters, digits, _ and .), a quoted string with its quotes, or one symbol. */
    String next() {
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

    /** An error naming the line the reading reached. */
    IllegalArgumentException error(String what) {
        int line = 1;
        for (int i = 0; i < Math.min(pos, text.length()); i++) {
            if (text.charAt(i) == '\n') {
                line++;
            }
        }
        return new IllegalArgumentException("line " + line + ": " + what);
    }
}
