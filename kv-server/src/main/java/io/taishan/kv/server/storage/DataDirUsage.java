package io.taishan.kv.server.storage;

import java.io.IOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.HashSet;
import java.util.Set;

/**
 * What one node's data directory holds on disk, from one walk over it ({@link
 * StorageEngine#measureDataDir}).
 *
 * @param totalBytes bytes of the distinct files under the data dir: a file hard-linked into the
 *     live data and several snapshots counts once, as it takes its space once
 * @param liveBytes bytes of the stores' live RocksDB files
 * @param snapshotCount cuts, the on-disk checkpoints of stores ({@code cuts/<id>/} directories)
 *     that the shards' snapshots reference
 * @param snapshotBytes the cuts' sizes summed, a file shared by several counted in each
 * @param files files seen
 * @param walkNanos how long the walk took
 */
public record DataDirUsage(
        long totalBytes,
        long liveBytes,
        long snapshotCount,
        long snapshotBytes,
        long files,
        long walkNanos) {

    /**
     * Walks {@code dataDir}; files that vanish meanwhile (compactions, drops) are skipped, so the
     * figures are those of a moment within the walk, not of one instant.
     */
    static DataDirUsage measure(Path dataDir) {
        long start = System.nanoTime();
        Path tables = dataDir.resolve("tables");
        long[] totals = new long[5];
        Set<Object> seen = new HashSet<>();
        try {
            Files.walkFileTree(
                    dataDir,
                    new SimpleFileVisitor<>() {
                        @Override
                        public FileVisitResult preVisitDirectory(
                                Path dir, BasicFileAttributes attrs) {
                            // tables/<table>/cuts/<id>
                            if (dir.startsWith(tables)) {
                                Path rel = tables.relativize(dir);
                                if (rel.getNameCount() == 3
                                        && rel.getName(1).toString().equals("cuts")
                                        && !rel.getName(2).toString().startsWith(".")) {
                                    totals[2]++;
                                }
                            }
                            return FileVisitResult.CONTINUE;
                        }

                        @Override
                        public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) {
                            long size = attrs.size();
                            totals[4]++;
                            Object key = attrs.fileKey();
                            if (key == null || seen.add(key)) {
                                totals[0] += size;
                            }
                            // tables/<table>/stores/<id>/live/<file>,
                            // tables/<table>/cuts/<id>/<file>
                            if (file.startsWith(tables)) {
                                Path rel = tables.relativize(file);
                                String area =
                                        rel.getNameCount() > 3 ? rel.getName(1).toString() : "";
                                if (area.equals("stores")
                                        && rel.getNameCount() > 4
                                        && rel.getName(3).toString().equals("live")) {
                                    totals[1] += size;
                                } else if (area.equals("cuts")) {
                                    totals[3] += size;
                                }
                            }
                            return FileVisitResult.CONTINUE;
                        }

                        @Override
                        public FileVisitResult visitFileFailed(Path file, IOException e) {
                            return FileVisitResult.CONTINUE;
                        }

                        @Override
                        public FileVisitResult postVisitDirectory(Path dir, IOException e) {
                            return FileVisitResult.CONTINUE;
                        }
                    });
        } catch (IOException e) {
            // The visitor swallows every per-file failure; only the root itself can get here.
        }
        return new DataDirUsage(
                totals[0], totals[1], totals[2], totals[3], totals[4], System.nanoTime() - start);
    }
}
