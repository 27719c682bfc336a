package io.taishan.kv.server.security;

import io.taishan.kv.protocol.BearerTokens;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Parses {@code auth.token-file}: one credential per line,
 *
 * <pre>
 * # token                              scope                    name (optional, for logs)
 * 9f1c0e2a7b4d4e21a3c5b8d6e0f1a2b3      *                        ops
 * 5e8d2c1b0a9f4e3d8c7b6a5f4e3d2c1b      team_a_,shared_          team-a-jobs
 * </pre>
 *
 * Fields are separated by spaces or tabs; blank lines and lines starting with {@code #} are
 * ignored. A scope is {@code *} (every table and every call) or a comma-separated list of table
 * name prefixes ({@code [A-Za-z0-9_.-]}). A token is at least {@value #MIN_TOKEN_LENGTH} visible
 * ASCII characters without spaces (e.g. {@code openssl rand -hex 32}); each token once. Errors name
 * the file and line, never the token.
 */
public final class TokenFile {
    /** Short tokens can be guessed; 16 characters is the least a random hex token should have. */
    public static final int MIN_TOKEN_LENGTH = 16;

    static final String KEY = "auth.token-file";

    private TokenFile() {}

    /**
     * @throws IllegalArgumentException naming the file (and line) of the first problem
     */
    public static Credentials read(Path file) {
        List<String> lines;
        try {
            lines = Files.readAllLines(file, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new IllegalArgumentException(KEY + " " + file + " cannot be read: " + e, e);
        }
        return parse(file, lines);
    }

    /** The lines of {@code file}, already read. */
    static Credentials parse(Path file, List<String> lines) {
        List<byte[]> digests = new ArrayList<>();
        List<Credential> credentials = new ArrayList<>();
        Set<String> seenDigests = new HashSet<>();
        Set<String> seenNames = new HashSet<>();
        for (int n = 1; n <= lines.size(); n++) {
            String line = lines.get(n - 1).strip();
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            String where = KEY + " " + file + " line " + n + ": ";
            String[] fields = line.split("[ \\t]+");
            if (fields.length < 2 || fields.length > 3) {
                throw new IllegalArgumentException(
                        where
                                + "expected '<token> <scope> [name]' (scope: * or"
                                + " prefix[,prefix...]), found "
                                + fields.length
                                + " field(s)");
            }
            String token = fields[0];
            String problem = BearerTokens.problemWith(token);
            if (problem != null) {
                throw new IllegalArgumentException(where + problem);
            }
            if (token.length() < MIN_TOKEN_LENGTH) {
                throw new IllegalArgumentException(
                        where
                                + "the token is shorter than "
                                + MIN_TOKEN_LENGTH
                                + " characters (use a random one, e.g. openssl rand -hex 32)");
            }
            byte[] digest = Credentials.digest(token);
            if (!seenDigests.add(Arrays.toString(digest))) {
                throw new IllegalArgumentException(
                        where + "the token is already on an earlier line; each token once");
            }
            String name = fields.length == 3 ? fields[2] : "line " + n;
            if (!seenNames.add(name)) {
                throw new IllegalArgumentException(
                        where + "the name '" + name + "' is already on an earlier line");
            }
            digests.add(digest);
            credentials.add(scope(fields[1], name, where));
        }
        if (credentials.isEmpty()) {
            throw new IllegalArgumentException(
                    KEY
                            + " "
                            + file
                            + " holds no credential: every call would be refused (lines are"
                            + " '<token> <scope> [name]')");
        }
        return new Credentials(digests, credentials);
    }

    private static Credential scope(String scope, String name, String where) {
        if (scope.equals("*")) {
            return new Credential(name, true, List.of());
        }
        // Messages show positions, not the scope: a line with its fields swapped would show a
        // token.
        List<String> prefixes = new ArrayList<>();
        String[] parts = scope.split(",", -1);
        for (int p = 0; p < parts.length; p++) {
            String prefix = parts[p];
            if (prefix.isEmpty()) {
                throw new IllegalArgumentException(
                        where
                                + "table prefix "
                                + (p + 1)
                                + " of the scope is empty (use * for every table)");
            }
            for (int i = 0; i < prefix.length(); i++) {
                char c = prefix.charAt(i);
                boolean ok =
                        (c >= 'a' && c <= 'z')
                                || (c >= 'A' && c <= 'Z')
                                || (c >= '0' && c <= '9')
                                || c == '_'
                                || c == '.'
                                || c == '-';
                if (!ok) {
                    throw new IllegalArgumentException(
                            where
                                    + "table prefix "
                                    + (p + 1)
                                    + " of the scope has a character no table name has at"
                                    + " position "
                                    + (i + 1)
                                    + " (names are [A-Za-z0-9_.-]; scope: * or"
                                    + " prefix[,prefix...])");
                }
            }
            prefixes.add(prefix);
        }
        return new Credential(name, false, prefixes);
    }
}
