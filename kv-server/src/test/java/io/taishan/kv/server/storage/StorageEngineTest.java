package io.taishan.kv.server.storage;

import static io.taishan.kv.server.storage.Ops.b;
import static io.taishan.kv.server.storage.Ops.put;
import static io.taishan.kv.server.storage.Ops.s;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.taishan.kv.proto.ErrorCode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class StorageEngineTest {
    @TempDir Path dir;

    private static ErrorCode codeOf(Throwable t) {
        return ((KvServerException) t).code();
    }

    @Test
    void catalogCreatesDescribesListsAndDrops() {
        try (StorageEngine engine = StorageEngine.open(Ops.smallOptions(dir))) {
            StorageEngine.Creation c = engine.createTable("job.op-1_a", 128, false);
            assertThat(c.created()).isTrue();
            assertThat(c.table().shardCount()).isEqualTo(128);
            engine.createTable("b", 1, false);

            assertThat(engine.tables())
                    .extracting(TableMeta::name)
                    .containsExactly("b", "job.op-1_a");
            assertThat(engine.table("b"))
                    .hasValueSatisfying(t -> assertThat(t.shardCount()).isEqualTo(1));
            assertThat(engine.table("nope")).isEmpty();

            StorageEngine.Creation again = engine.createTable("b", 1, true);
            assertThat(again.created()).isFalse();
            assertThat(again.table()).isEqualTo(engine.table("b").orElseThrow());

            assertThatThrownBy(() -> engine.createTable("b", 1, false))
                    .satisfies(e -> assertThat(codeOf(e)).isEqualTo(ErrorCode.TABLE_EXISTS));
            assertThatThrownBy(() -> engine.createTable("b", 2, true))
                    .satisfies(e -> assertThat(codeOf(e)).isEqualTo(ErrorCode.TABLE_EXISTS))
                    .hasMessageContaining("exists with 1 shards, not 2");

            engine.dropTable("b");
            assertThat(engine.table("b")).isEmpty();
            assertThat(dir.resolve("tables/b")).doesNotExist();
            assertThatThrownBy(() -> engine.dropTable("b"))
                    .satisfies(e -> assertThat(codeOf(e)).isEqualTo(ErrorCode.TABLE_NOT_FOUND))
                    .hasMessageContaining("table 'b' not found");
        }
    }

    @Test
    void badNamesAndShardCountsAreInvalid() {
        try (StorageEngine engine = StorageEngine.open(Ops.smallOptions(dir))) {
            for (String bad : new String[] {"", ".", "..", "a/b", "a b", "x".repeat(201), "ü"}) {
                assertThatThrownBy(() -> engine.createTable(bad, 1, false))
                        .satisfies(e -> assertThat(codeOf(e)).isEqualTo(ErrorCode.INVALID_ARGUMENT))
                        .hasMessageContaining("invalid table name");
            }
            for (int bad : new int[] {0, -1, TableMeta.MAX_SHARDS + 1}) {
                assertThatThrownBy(() -> engine.createTable("t", bad, false))
                        .satisfies(e -> assertThat(codeOf(e)).isEqualTo(ErrorCode.INVALID_ARGUMENT))
                        .hasMessageContaining("invalid shard count " + bad);
            }
            engine.createTable("t", 2, false);
            assertThatThrownBy(() -> engine.tableStore("t").shard(2))
                    .satisfies(e -> assertThat(codeOf(e)).isEqualTo(ErrorCode.SHARD_OUT_OF_RANGE))
                    .hasMessageContaining("shard 2 out of range for table 't' with 2 shards");
        }
    }

    @Test
    void restartKeepsTablesDataEpochsAndSnapshots() {
        long epoch;
        try (StorageEngine engine = StorageEngine.open(Ops.smallOptions(dir))) {
            engine.createTable("t", 8, false);
            Shard shard = engine.tableStore("t").shard(5);
            shard.open();
            epoch = shard.open();
            shard.write(epoch, List.of(put("a", "1"), Ops.marker(3, true), put("a", "2")));
        }
        try (StorageEngine engine = StorageEngine.open(Ops.smallOptions(dir))) {
            assertThat(engine.tables()).extracting(TableMeta::name).containsExactly("t");
            Shard shard = engine.tableStore("t").shard(5);
            assertThat(shard.epoch()).isEqualTo(epoch);
            assertThat(s(shard.get(epoch, b("a")))).isEqualTo("2");
            assertThat(shard.snapshots())
                    .singleElement()
                    .satisfies(
                            m -> {
                                assertThat(m.snapshotId()).isEqualTo(3);
                                assertThat(m.pinned()).isTrue();
                            });
            assertThat(engine.tableStore("t").existingShards()).containsExactly(5);
            long next = shard.open();
            assertThat(next).isGreaterThan(epoch);
            assertThat(s(shard.get(next, b("a")))).isEqualTo("2");
            long restored = shard.restore(3);
            assertThat(restored).isGreaterThan(next);
            assertThat(s(shard.get(restored, b("a")))).isEqualTo("1");
        }
    }

    @Test
    void droppedAndRecreatedTableStartsEmpty() {
        try (StorageEngine engine = StorageEngine.open(Ops.smallOptions(dir))) {
            engine.createTable("t", 2, false);
            Shard old = engine.tableStore("t").shard(0);
            long epoch = old.open();
            old.write(epoch, List.of(put("a", "1")));
            engine.dropTable("t");
            assertThatThrownBy(() -> old.get(epoch, b("a")))
                    .satisfies(e -> assertThat(codeOf(e)).isEqualTo(ErrorCode.TABLE_NOT_FOUND));

            engine.createTable("t", 2, false);
            Shard fresh = engine.tableStore("t").shard(0);
            assertThatThrownBy(() -> fresh.get(epoch, b("a")))
                    .satisfies(e -> assertThat(codeOf(e)).isEqualTo(ErrorCode.FENCED));
            long e2 = fresh.open();
            // Epochs are unique on the node: the old table's lease can never match the new one.
            assertThat(e2).isGreaterThan(epoch);
            assertThat(fresh.get(e2, b("a"))).isNull();
            assertThat(fresh.snapshots()).isEmpty();
        }
    }

    @Test
    void aDataDirOfThePerShardLayoutIsRefusedSayingHowToMove() throws IOException {
        Files.createDirectories(dir.resolve("tables/job_op/shard-0/live"));
        Files.writeString(dir.resolve("tables/job_op/table.properties"), "name=job_op\n");
        assertThatThrownBy(() -> StorageEngine.open(Ops.smallOptions(dir)))
                .isInstanceOf(StorageStartupException.class)
                .hasMessageContaining("data dir " + dir.toAbsolutePath())
                .hasMessageContaining("per-shard layout")
                .hasMessageContaining("canonical savepoint");
        // Nothing was changed: the earlier version can still start on it.
        assertThat(dir.resolve("tables/job_op/shard-0/live")).isDirectory();
        assertThat(dir.resolve(StorageEngine.LAYOUT_FILE)).doesNotExist();
    }

    @Test
    void dataDirUnderARegularFileIsRefused() throws IOException {
        Path file = Files.createFile(dir.resolve("a-file"));
        assertThatThrownBy(() -> StorageEngine.open(Ops.smallOptions(file.resolve("data"))))
                .isInstanceOf(StorageStartupException.class)
                .hasMessageContaining("data dir " + file.resolve("data"))
                .hasMessageContaining("cannot be created");
    }

    @Test
    void aDataDirServesOneEngineAtATime() {
        try (StorageEngine engine = StorageEngine.open(Ops.smallOptions(dir))) {
            assertThatThrownBy(() -> StorageEngine.open(Ops.smallOptions(dir)))
                    .isInstanceOf(StorageStartupException.class)
                    .hasMessageContaining("in use by another kv-server");
        }
        StorageEngine.open(Ops.smallOptions(dir)).close();
    }

    @Test
    void closedEngineRefusesWithShuttingDown() {
        StorageEngine engine = StorageEngine.open(Ops.smallOptions(dir));
        engine.createTable("t", 1, false);
        Shard shard = engine.tableStore("t").shard(0);
        long epoch = shard.open();
        engine.close();
        assertThatThrownBy(() -> shard.get(epoch, b("a")))
                .satisfies(e -> assertThat(codeOf(e)).isEqualTo(ErrorCode.SHUTTING_DOWN));
        assertThatThrownBy(() -> engine.createTable("u", 1, false))
                .satisfies(e -> assertThat(codeOf(e)).isEqualTo(ErrorCode.SHUTTING_DOWN));
    }
}
