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
import java.util.Locale;
import java.util.Set;

/**
 * Parses {@code auth.token-file}: one credential per line,
 *
 * <pre>
 * # token                              scope                    name (optional, for logs)  checkpoints (optional)
 * 9f1c0e2a7b4d4e21a3c5b8d6e0f1a2b3      *                        ops
 * 5e8d2c1b0a9f4e3d8c7b6a5f4e3d2c1b      team_a_,shared_          team-a-jobs                checkpoints=s3://ckpt/team-a/
 * 0a9f4e3d8c7b6a5f4e3d2c1b5e8d2c1b      team_b_                  checkpoints=s3://ckpt/team-b/,hdfs://nn:8020/flink/team-b
 * </pre>
 *
 * Fields are separated by spaces or tabs; blank lines and lines starting with {@code #} are
 * ignored. A scope is {@code *} (every table, every call and every path) or a comma-separated list
 * of table name prefixes ({@code [A-Za-z0-9_.-]}). A token is at least {@value #MIN_TOKEN_LENGTH}
 * visible ASCII characters without spaces (e.g. {@code openssl rand -hex 32}); each token once.
 *
 * <p>After the scope come, both optional and in this order, a name and the field {@code
 * checkpoints=<dir>[,<dir>...]}: a field after the scope that starts with {@code checkpoints=} is
 * that field, any other the name. So every file of the two-or-three-field format reads as before,
 * unless a name starts with {@code checkpoints=} or, ignoring case, {@code checkpoint} and holds a
 * {@code =}, which is refused as a misspelt key rather than taken for a name (the token would
 * silently get no directory). Each {@code <dir>} is an absolute URI as Flink writes paths ({@link
 * CheckpointPath}); only a scoped token has them (an admin's may name every path anyway).
 *
 * <p>Errors name the file and line, never the token, and never a field's text, which in a line with
 * its fields mixed up could be a token: they say which field, which position.
 */
public final class TokenFile {
    /** Short tokens can be guessed; 16 characters is the least a random hex token should have. */
    public static final int MIN_TOKEN_LENGTH = 16;

    static final String KEY = "auth.token-file";

    static final String CHECKPOINTS = "checkpoints=";

    private static final String FORMAT =
            "'<token> <scope> [name] [checkpoints=<dir>[,<dir>...]]' (scope: * or"
                    + " prefix[,prefix...])";

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
            if (fields.length < 2 || fields.length > 4) {
                throw new IllegalArgumentException(
                        where + "expected " + FORMAT + ", found " + fields.length + " field(s)");
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
            String name = null;
            String checkpoints = null;
            for (int f = 2; f < fields.length; f++) {
                if (fields[f].startsWith(CHECKPOINTS) && checkpoints == null) {
                    checkpoints = fields[f].substring(CHECKPOINTS.length());
                } else if (f == 2) {
                    name = fields[f];
                } else {
                    throw new IllegalArgumentException(
                            where
                                    + "expected "
                                    + FORMAT
                                    + "; field "
                                    + (f + 1)
                                    + " is neither the name nor the one checkpoints= field"
                                    + " after it");
                }
            }
            if (name != null && looksLikeAMisspeltKey(name)) {
                throw new IllegalArgumentException(
                        where
                                + "the third field looks like a misspelt checkpoints=<dir>"
                                + " (names may not start with 'checkpoint' and hold '=')");
            }
            if (name == null) {
                name = "line " + n;
            }
            if (!seenNames.add(name)) {
                throw new IllegalArgumentException(
                        where + "the name '" + name + "' is already on an earlier line");
            }
            Credential scoped = scope(fields[1], name, where);
            if (checkpoints != null) {
                if (scoped.admin()) {
                    throw new IllegalArgumentException(
                            where
                                    + "an admin token (scope *) may name every path; checkpoints="
                                    + " is for scoped tokens only");
                }
                scoped =
                        new Credential(
                                name, false, scoped.prefixes(), checkpointDirs(checkpoints, where));
            }
            digests.add(digest);
            credentials.add(scoped);
        }
        if (credentials.isEmpty()) {
            throw new IllegalArgumentException(
                    KEY
                            + " "
                            + file
                            + " holds no credential: every call would be refused (lines are "
                            + FORMAT
                            + ")");
        }
        return new Credentials(digests, credentials);
    }

    private static boolean looksLikeAMisspeltKey(String name) {
        return name.toLowerCase(Locale.ROOT).startsWith("checkpoint") && name.contains("=");
    }

    private static List<CheckpointPath> checkpointDirs(String value, String where) {
        if (value.isEmpty()) {
            throw new IllegalArgumentException(
                    where + "checkpoints= names no directory (leave the field out instead)");
        }
        List<CheckpointPath> dirs = new ArrayList<>();
        String[] parts = value.split(",", -1);
        for (int d = 0; d < parts.length; d++) {
            String what = "checkpoint directory " + (d + 1) + " of checkpoints= ";
            if (parts[d].isEmpty()) {
                throw new IllegalArgumentException(where + what + "is empty");
            }
            try {
                dirs.add(CheckpointPath.parse(parts[d]));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(
                        where
                                + what
                                + e.getMessage()
                                + " (a directory is an absolute URI as Flink writes paths:"
                                + " s3://bucket/team-a/, hdfs://nn:8020/flink/team-a,"
                                + " file:///data/ckpt/team-a)");
            }
        }
        return dirs;
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
