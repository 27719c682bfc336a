package io.taishan.benchmarks.kv;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import javax.annotation.Nullable;

/**
 * Waits until the server's background work after a bulk load or a table drop has finished, so that
 * the timings that follow measure the operation and not the tail of earlier I/O. Two signs: no file
 * of the server's data dir changed for a while (flushes, compactions), and the disks mostly idle
 * (deleting a dropped gigabyte goes on in the file system after the files are gone). Without a data
 * dir to watch it only checks the disks; without /proc/diskstats it waits a fixed time.
 */
final class Quiescence {
    private static final long QUIET_MILLIS = 2_000;

    /** Bounds the whole run on a busy machine; a wait that ends here is reported as such. */
    private static final long MAX_WAIT_MILLIS = 20_000;

    private static final long BLIND_WAIT_MILLIS = 5_000;
    private static final long POLL_MILLIS = 250;

    /** Share of wall time a disk may spend on I/O and still count as idle. */
    private static final double IDLE_DISK_BUSY_SHARE = 0.10;

    private static final Path DISKSTATS = Path.of("/proc/diskstats");

    @Nullable private final Path dataDir;

    Quiescence(@Nullable Path dataDir) {
        this.dataDir = dataDir;
    }

    /** How long a wait took, and whether it saw quiet or gave up. */
    record Wait(double millis, boolean quiet) {
        @Override
        public String toString() {
            return Table.number(millis / 1e3, 1) + (quiet ? "" : " (still busy)");
        }
    }

    Wait await() {
        long start = System.nanoTime();
        boolean quiet = false;
        try {
            if (dataDir == null && !Files.isReadable(DISKSTATS)) {
                Thread.sleep(BLIND_WAIT_MILLIS);
            } else {
                quiet = awaitQuiet();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        Wait wait = new Wait((System.nanoTime() - start) / 1e6, quiet);
        if (!quiet) {
            KvServiceBenchmark.progress(
                    "the server or the disk is still busy after " + wait + " s");
        }
        return wait;
    }

    private boolean awaitQuiet() throws InterruptedException {
        long deadline = System.currentTimeMillis() + MAX_WAIT_MILLIS;
        long quietSince = System.currentTimeMillis();
        long lastBusyMillis = diskBusyMillis();
        while (System.currentTimeMillis() < deadline) {
            Thread.sleep(POLL_MILLIS);
            long now = System.currentTimeMillis();
            long busyMillis = diskBusyMillis();
            boolean diskIdle = busyMillis - lastBusyMillis <= POLL_MILLIS * IDLE_DISK_BUSY_SHARE;
            lastBusyMillis = busyMillis;
            boolean filesStill = dataDir == null || now - lastModified(dataDir) >= QUIET_MILLIS;
            if (!diskIdle || !filesStill) {
                quietSince = now;
            } else if (now - quietSince >= QUIET_MILLIS) {
                return true;
            }
        }
        return false;
    }

    /**
     * Milliseconds the disks have spent doing I/O since boot (field 13 of /proc/diskstats, summed),
     * or 0 where that is not known.
     */
    private static long diskBusyMillis() {
        if (!Files.isReadable(DISKSTATS)) {
            return 0;
        }
        try {
            List<String> lines = Files.readAllLines(DISKSTATS);
            long busy = 0;
            for (String line : lines) {
                String[] fields = line.trim().split("\\s+");
                if (fields.length < 13 || fields[2].matches("(loop|ram|zram).*")) {
                    continue;
                }
                busy += Long.parseLong(fields[12]);
            }
            return busy;
        } catch (IOException | NumberFormatException e) {
            return 0;
        }
    }

    private static long lastModified(Path root) {
        try (Stream<Path> paths = Files.walk(root)) {
            return paths.mapToLong(Quiescence::lastModifiedOrNow).max().orElse(0);
        } catch (NoSuchFileException | UncheckedIOException e) {
            // a file vanished under the walk: the server is still busy
            return System.currentTimeMillis();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static long lastModifiedOrNow(Path path) {
        try {
            return Files.getLastModifiedTime(path).toMillis();
        } catch (NoSuchFileException e) {
            return System.currentTimeMillis();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
