package io.taishan.benchmarks.keygroups;

import io.taishan.benchmarks.state.StateHome;
import java.io.IOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;

/**
 * What the process holding the state takes at one moment, read from outside it: open file
 * descriptors ({@code /proc/<pid>/fd}), resident memory and threads ({@code /proc/<pid>/status}),
 * and its data directory's bytes and files. A value that cannot be read is -1.
 *
 * @param diskBytes bytes of the distinct files under the data directory: a file hard-linked into a
 *     snapshot is counted once, as the disk holds it once
 * @param files regular files under the data directory, every link counted
 */
public record Footprint(long openFiles, long rssBytes, long threads, long diskBytes, long files) {
    public static Footprint of(StateHome home) {
        Path proc = Path.of("/proc", Long.toString(home.pid()));
        long fds;
        try (Stream<Path> entries = Files.list(proc.resolve("fd"))) {
            fds = entries.count();
        } catch (IOException | RuntimeException e) {
            fds = -1;
        }
        long rss = -1;
        long threads = -1;
        try {
            for (String line : Files.readAllLines(proc.resolve("status"))) {
                if (line.startsWith("VmRSS:")) {
                    rss = Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
                } else if (line.startsWith("Threads:")) {
                    threads = Long.parseLong(line.replaceAll("[^0-9]", ""));
                }
            }
        } catch (IOException | RuntimeException e) {
            // the process is gone, or this is not Linux: unknown
        }
        long[] disk = home.dataDir() == null ? new long[] {0, 0} : disk(home.dataDir());
        return new Footprint(fds, rss, threads, disk[0], disk[1]);
    }

    /** Distinct bytes and file count under {@code dir}; {-1, -1} if it cannot be walked. */
    public static long[] disk(Path dir) {
        long[] totals = new long[2];
        Set<List<Object>> seen = new HashSet<>();
        try {
            Files.walkFileTree(
                    dir,
                    new SimpleFileVisitor<>() {
                        @Override
                        public FileVisitResult visitFile(Path file, BasicFileAttributes attrs)
                                throws IOException {
                            if (attrs.isRegularFile()) {
                                totals[1]++;
                                Map<String, Object> unix =
                                        Files.readAttributes(file, "unix:dev,ino");
                                if (seen.add(List.of(unix.get("dev"), unix.get("ino")))) {
                                    totals[0] += attrs.size();
                                }
                            }
                            return FileVisitResult.CONTINUE;
                        }

                        @Override
                        public FileVisitResult visitFileFailed(Path file, IOException e)
                                throws IOException {
                            // The server deletes files while it runs (compactions, released
                            // snapshots): a file gone between listing and reading is not there.
                            if (e instanceof NoSuchFileException) {
                                return FileVisitResult.CONTINUE;
                            }
                            throw e;
                        }
                    });
            return totals;
        } catch (IOException | UnsupportedOperationException e) {
            return new long[] {-1, -1};
        }
    }
}
