package io.taishan.kv.server.storage;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The highest epoch this node has handed out, for any shard of any table, persisted before it is
 * used. Drawing every epoch from it keeps them unique on the node, so a lease of a dropped table
 * can never be current in a re-created table of the same name.
 */
final class EpochCounter {
    private final Path file;
    private long highest;

    EpochCounter(Path file) throws IOException {
        this.file = file;
        if (Files.exists(file)) {
            String text = Files.readString(file, StandardCharsets.US_ASCII).trim();
            try {
                highest = Long.parseLong(text);
            } catch (NumberFormatException e) {
                throw new IOException("corrupt epoch counter " + file + ": '" + text + "'");
            }
        }
    }

    /** A new epoch above both every one handed out before and {@code current}. */
    synchronized long next(long current) throws IOException {
        long next = Math.max(highest, current) + 1;
        DurableFiles.writeAtomically(file, Long.toString(next).getBytes(StandardCharsets.US_ASCII));
        highest = next;
        return next;
    }
}
