package io.taishan.kv.server.storage;

import java.io.IOException;
import java.io.StringReader;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Properties;

/** A table of the catalog: its name and its shard count, fixed for its life. */
public record TableMeta(String name, int shardCount, long createdAtMillis) {

    /** Flink's upper bound for max parallelism, hence for key groups. */
    public static final int MAX_SHARDS = 32768;

    private static final int MAX_NAME_LENGTH = 200;

    static final String FILE_NAME = "table.properties";

    /** Fails with INVALID_ARGUMENT unless {@code name} is a table name that is also a safe dir. */
    public static void checkName(String name) {
        if (name == null || !isNameSyntax(name) || isDotName(name)) {
            throw KvServerException.invalid(
                    "invalid table name '"
                            + name
                            + "': expected 1 to 200 of [A-Za-z0-9_.-], not '.' or '..'");
        }
    }

    public static void checkShardCount(String name, int shardCount) {
        if (shardCount < 1 || shardCount > MAX_SHARDS) {
            throw KvServerException.invalid(
                    "invalid shard count "
                            + shardCount
                            + " for table '"
                            + name
                            + "': expected 1.."
                            + MAX_SHARDS);
        }
    }

    /**
     * {@code [A-Za-z0-9_.-]{1,200}} by hand: every data call names its table, and a regex match
     * would cost a matcher and a backtracking engine on each.
     */
    private static boolean isNameSyntax(String name) {
        int length = name.length();
        if (length < 1 || length > MAX_NAME_LENGTH) {
            return false;
        }
        for (int i = 0; i < length; i++) {
            char c = name.charAt(i);
            boolean allowed =
                    (c >= 'A' && c <= 'Z')
                            || (c >= 'a' && c <= 'z')
                            || (c >= '0' && c <= '9')
                            || c == '_'
                            || c == '.'
                            || c == '-';
            if (!allowed) {
                return false;
            }
        }
        return true;
    }

    private static boolean isDotName(String name) {
        return name.equals(".") || name.equals("..");
    }

    byte[] toBytes() {
        Properties p = new Properties();
        p.setProperty("name", name);
        p.setProperty("shard.count", Integer.toString(shardCount));
        p.setProperty("created.at.millis", Long.toString(createdAtMillis));
        StringWriter w = new StringWriter();
        try {
            p.store(w, "Taishan table");
        } catch (IOException e) {
            throw new AssertionError(e);
        }
        return w.toString().getBytes(StandardCharsets.UTF_8);
    }

    static TableMeta read(Path tableDir) throws IOException {
        Properties p = new Properties();
        p.load(new StringReader(Files.readString(tableDir.resolve(FILE_NAME))));
        try {
            return new TableMeta(
                    p.getProperty("name"),
                    Integer.parseInt(p.getProperty("shard.count")),
                    Long.parseLong(p.getProperty("created.at.millis")));
        } catch (RuntimeException e) {
            throw new IOException("corrupt table metadata in " + tableDir + ": " + e, e);
        }
    }
}
