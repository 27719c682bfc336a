package io.taishan.kv.server.storage;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The highest epoch this node has handed out, for any shard of any table, persisted before it is
 * used. Drawing every epoch from it keeps them unique on the node, so a lease of a dropped table
 * can never be current in a re-created table of the same name.
 *
 * <p>It also keeps the <em>lease floor</em>: no epoch below it is honoured, whatever a shard's own
 * epoch file says. Raising the floor above every epoch handed out fences every lease of the node at
 * once, in O(1), which is what a start after an unclean stop that lost acknowledged writes needs:
 * the shards themselves are loaded lazily, and there may be tens of thousands.
 */
final class EpochCounter {
    private final Path file;
    private final Path floorFile;
    private long highest;
    private volatile long floor;

    EpochCounter(Path file, Path floorFile) throws IOException {
        this.file = file;
        this.floorFile = floorFile;
        this.highest = read(file);
        this.floor = read(floorFile);
    }

    private static long read(Path path) throws IOException {
        if (!Files.exists(path)) {
            return 0;
        }
        String text = Files.readString(path, StandardCharsets.US_ASCII).trim();
        try {
            return Long.parseLong(text);
        } catch (NumberFormatException e) {
            throw new IOException("corrupt epoch file " + path + ": '" + text + "'");
        }
    }

    /** A new epoch above both every one handed out before and {@code current}. */
    synchronized long next(long current) throws IOException {
        long next = Math.max(Math.max(highest, current), floor) + 1;
        DurableFiles.writeAtomically(file, Long.toString(next).getBytes(StandardCharsets.US_ASCII));
        highest = next;
        return next;
    }

    /**
     * Fences every lease handed out so far, durably, before it returns: a crash right after still
     * leaves them fenced.
     */
    synchronized void fenceEveryLease() throws IOException {
        long newFloor = highest + 1;
        DurableFiles.writeAtomically(
                floorFile, Long.toString(newFloor).getBytes(StandardCharsets.US_ASCII));
        floor = newFloor;
    }

    /** Epochs below this are fenced (0: none is). */
    long floor() {
        return floor;
    }
}
