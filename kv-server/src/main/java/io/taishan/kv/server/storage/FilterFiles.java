package io.taishan.kv.server.storage;

import io.taishan.bloom.FilterFormatException;
import io.taishan.bloom.FilterSizing;
import io.taishan.bloom.RebuildingFilter;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * A shard filter on disk: {@link RebuildingFilter.Snapshot#writeTo}'s form (magic "TSRF", version
 * and rebuild counters, header checksum, then the BloomFilter form with its own checksums), as
 * {@value #FILE_NAME} inside a snapshot directory or the live directory. Never rewritten in place
 * (a new one is renamed over, a stale one unlinked), so hard links between a snapshot and the live
 * data that restored it stay independent.
 */
final class FilterFiles {
    /** Not a RocksDB file name, so RocksDB neither reads nor deletes it in its directory. */
    static final String FILE_NAME = "TAISHAN-FILTER";

    private static final int BUFFER = 1 << 16;

    private FilterFiles() {}

    /** Writes without fsync: a snapshot's files are fsynced together before its rename. */
    static void write(Path target, RebuildingFilter.Snapshot filter) throws IOException {
        try (FileChannel ch =
                FileChannel.open(target, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            writeTo(ch, filter);
        }
    }

    /** Writes to a temporary name, fsyncs, renames over {@code target}, fsyncs the directory. */
    static void writeDurably(Path target, RebuildingFilter.Snapshot filter) throws IOException {
        Path tmp = temporary(target);
        try (FileChannel ch =
                FileChannel.open(
                        tmp,
                        StandardOpenOption.CREATE,
                        StandardOpenOption.WRITE,
                        StandardOpenOption.TRUNCATE_EXISTING)) {
            writeTo(ch, filter);
            ch.force(true);
        }
        DurableFiles.moveAtomically(tmp, target);
    }

    private static void writeTo(FileChannel ch, RebuildingFilter.Snapshot filter)
            throws IOException {
        OutputStream out = new BufferedOutputStream(Channels.newOutputStream(ch), BUFFER);
        filter.writeTo(out);
        out.flush();
    }

    /**
     * Loads a filter written by {@link #write}; the caller closes it.
     *
     * @throws FilterFormatException if the file is not exactly one readable shard filter
     */
    static RebuildingFilter read(Path file, FilterSizing sizing) throws IOException {
        try (InputStream in = new BufferedInputStream(Files.newInputStream(file), BUFFER)) {
            RebuildingFilter filter = RebuildingFilter.readFrom(sizing, in);
            if (in.read() != -1) {
                filter.close();
                throw new FilterFormatException("bytes after the shard filter in " + file);
            }
            return filter;
        }
    }

    static Path temporary(Path target) {
        return target.resolveSibling(target.getFileName() + ".tmp");
    }
}
