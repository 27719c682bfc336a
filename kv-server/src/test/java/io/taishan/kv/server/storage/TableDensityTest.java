package io.taishan.kv.server.storage;

import static io.taishan.kv.server.storage.Ops.marker;
import static io.taishan.kv.server.storage.Ops.put;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.taishan.kv.proto.WriteOp;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * What a table with Flink's largest key-group count costs the node: disk in allocated blocks
 * ({@code du}: RocksDB preallocates its MANIFEST and WAL with fallocate, which file sizes do not
 * show but a full disk does), files and open file descriptors, after every one of its 32,768 shards
 * was leased, written and checkpointed. They follow the table's writers (one store each), not its
 * shards: the same figures hold at 128 shards.
 */
class TableDensityTest {
    private static final int SHARDS = 32768;
    private static final int WRITERS = 4;
    private static final long MAX_DISK_BYTES = 12 << 20;
    private static final int MAX_FILES = 200;

    @TempDir Path dir;

    @ParameterizedTest
    @EnumSource(WalMode.class)
    void aTableOf32768ShardsCostsWhatItsWritersStoresCost(WalMode wal) throws Exception {
        StorageOptions defaults = StorageOptions.defaults(dir);
        StorageOptions options =
                new StorageOptions(
                        dir,
                        wal,
                        defaults.blockCacheBytes(),
                        defaults.writeBufferBytes(),
                        defaults.storeWriteBufferBytes(),
                        defaults.backgroundThreads(),
                        defaults.maxOpenFilesPerStore(),
                        Duration.ofHours(1),
                        defaults.maxOpenStores(),
                        FilterOptions.DEFAULTS,
                        SnapshotCacheOptions.DEFAULTS);
        long emptyDisk = allocatedBytes(dir);
        long fdsBefore = openFileDescriptors();
        try (StorageEngine engine = StorageEngine.open(options)) {
            engine.createTable("t", SHARDS, false);
            TableStore table = engine.tableStore("t");
            int perWriter = SHARDS / WRITERS;
            for (int w = 0; w < WRITERS; w++) {
                int[] shards = new int[perWriter];
                for (int i = 0; i < perWriter; i++) {
                    shards[i] = w * perWriter + i;
                }
                long epoch = table.openShards("writer-" + w, shards, false)[0];
                List<TableWrite.ShardOps> writes = new ArrayList<>(perWriter);
                for (int s : shards) {
                    writes.add(
                            new TableWrite.ShardOps(
                                    s, epoch, List.<WriteOp>of(put("k", "v"), marker(1, false))));
                }
                table.write(writes, x -> null);
            }
            long disk = allocatedBytes(dir) - emptyDisk;
            long files;
            try (Stream<Path> all = Files.walk(dir)) {
                files = all.filter(Files::isRegularFile).count();
            }
            long fds = openFileDescriptors() - fdsBefore;
            System.out.printf(
                    "wal=%s: %d shards of %d writers, one write and one snapshot each: %d KiB of"
                            + " disk, %d files, %d more file descriptors, %d stores, %d cuts%n",
                    wal,
                    SHARDS,
                    WRITERS,
                    disk >> 10,
                    files,
                    fds,
                    table.stores().size(),
                    table.catalog().cutCount());
            assertThat(table.stores()).hasSize(WRITERS);
            assertThat(table.catalog().cutCount()).isEqualTo(WRITERS);
            assertThat(disk).isLessThan(MAX_DISK_BYTES);
            assertThat(files).isLessThan(MAX_FILES);
            if (fds >= 0) {
                assertThat(fds).isLessThan(WRITERS * 16L);
            }
        }
    }

    /**
     * A node's share of 8 operators of 32,768 key groups each (262,144 shards), each table leased
     * by 2 subtasks, every shard written once and checkpointed: what the node then holds open and
     * on disk, and the memory its shards' state takes.
     */
    @org.junit.jupiter.api.Test
    void eightOperatorsOf32768KeyGroupsFitOneNode() throws Exception {
        int tables = 8;
        int writers = 2;
        long emptyDisk = allocatedBytes(dir);
        long fdsBefore = openFileDescriptors();
        Runtime rt = Runtime.getRuntime();
        System.gc();
        long heapBefore = rt.totalMemory() - rt.freeMemory();
        try (StorageEngine engine = StorageEngine.open(StorageOptions.defaults(dir))) {
            for (int t = 0; t < tables; t++) {
                engine.createTable("op" + t, SHARDS, false);
                TableStore table = engine.tableStore("op" + t);
                int perWriter = SHARDS / writers;
                for (int w = 0; w < writers; w++) {
                    int[] shards = new int[perWriter];
                    for (int i = 0; i < perWriter; i++) {
                        shards[i] = w * perWriter + i;
                    }
                    long epoch = table.openShards("writer-" + w, shards, false)[0];
                    List<TableWrite.ShardOps> writes = new ArrayList<>(perWriter);
                    for (int s : shards) {
                        writes.add(
                                new TableWrite.ShardOps(
                                        s,
                                        epoch,
                                        List.<WriteOp>of(put("k", "v"), marker(1, false))));
                    }
                    table.write(writes, x -> null);
                }
            }
            System.gc();
            long heap = rt.totalMemory() - rt.freeMemory() - heapBefore;
            long disk = allocatedBytes(dir) - emptyDisk;
            long files;
            try (Stream<Path> all = Files.walk(dir)) {
                files = all.filter(Files::isRegularFile).count();
            }
            long fds = openFileDescriptors() - fdsBefore;
            System.out.printf(
                    "%d tables x %d shards (%d shards), %d writers each: %d open stores, %d KiB of"
                            + " disk, %d files, %d more file descriptors, %d KiB more heap,"
                            + " %d KiB of filters%n",
                    tables,
                    SHARDS,
                    tables * SHARDS,
                    writers,
                    engine.openStoreCount(),
                    disk >> 10,
                    files,
                    fds,
                    heap >> 10,
                    engine.filterBytes() >> 10);
            assertThat(engine.openStoreCount()).isEqualTo(tables * writers);
            if (fds >= 0) {
                assertThat(fds).isLessThan(tables * writers * 16L);
            }
            assertThat(files).isLessThan(tables * writers * 20L);
            assertThat(engine.filterBytes()).isLessThan(tables * SHARDS * 256L);
        }
    }

    private static long openFileDescriptors() {
        String[] fds = Path.of("/proc/self/fd").toFile().list();
        return fds == null ? -1 : fds.length;
    }

    private static long allocatedBytes(Path dir) throws IOException, InterruptedException {
        Process du;
        try {
            du = new ProcessBuilder("du", "-s", "-B1", dir.toString()).start();
        } catch (IOException e) {
            assumeTrue(false, "no du on this machine: " + e.getMessage());
            throw e;
        }
        assertThat(du.waitFor(30, TimeUnit.SECONDS)).isTrue();
        String out = new String(du.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assumeTrue(du.exitValue() == 0, "du failed: " + out);
        return Long.parseLong(out.split("\\s+")[0]);
    }
}
