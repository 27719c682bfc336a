package io.taishan.kv.server.storage;

import static io.taishan.kv.server.storage.Ops.marker;
import static io.taishan.kv.server.storage.Ops.put;
import static org.assertj.core.api.Assertions.assertThat;

import io.taishan.kv.server.durable.CutFile;
import io.taishan.kv.server.durable.FileOrigins;
import io.taishan.kv.server.durable.RemoteFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What upload reuse stands on, in the storage alone: every store has a lineage of its own (a fork
 * too, and one from before lineages existed gets one), its cuts carry it, a fork starts with its
 * cut's record of copies under its own lineage, and a cut's durable id finds it again after a
 * restart.
 */
class StoreLineageTest {
    @TempDir Path dir;

    private StorageEngine engine;
    private TableStore table;

    @BeforeEach
    void setUp() {
        engine = StorageEngine.open(Ops.smallOptions(dir));
        engine.createTable("t", 4, false);
        table = engine.tableStore("t");
    }

    @AfterEach
    void tearDown() {
        engine.close();
    }

    private StoreCut checkpoint(String writer, long snapshotId) {
        long epoch = table.openShards(writer, new int[] {0, 1}, false)[0];
        table.write(
                List.of(
                        new TableWrite.ShardOps(
                                0, epoch, List.of(put("k", "v"), marker(snapshotId, false))),
                        new TableWrite.ShardOps(
                                1, epoch, List.of(put("k", "w"), marker(snapshotId, false)))),
                x -> null);
        return table.catalog().cut(table.catalog().cutIdOf(0, snapshotId));
    }

    @Test
    void aForkHasALineageOfItsOwnAndStartsWithItsCutsCopies() throws Exception {
        StoreCut cut = checkpoint("w1", 1);
        RangeStore origin = table.shard(0).store();
        assertThat(cut.lineage()).isEqualTo(origin.lineage());
        String sst =
                DurableFiles.listFiles(table.catalog().cutDir(cut.id())).stream()
                        .map(p -> p.getFileName().toString())
                        .filter(n -> n.endsWith(".sst"))
                        .findFirst()
                        .orElseThrow();
        RemoteFile copy = new RemoteFile("s3://b/shared/1f0c", 100, 7);
        table.catalog()
                .recordCopies(
                        cut.id(), FileOrigins.of(cut.lineage(), List.of(new CutFile(sst, copy))));

        table.restoreShards(
                "w2",
                List.of(new TableStore.Restore(0, table, 1), new TableStore.Restore(1, table, 1)),
                true);

        RangeStore fork = table.shard(0).store();
        assertThat(fork).isNotSameAs(origin);
        assertThat(fork.lineage()).isNotEqualTo(origin.lineage());
        FileOrigins inherited = FileOrigins.readFrom(fork.dir()).orElseThrow();
        assertThat(inherited.storeId()).isEqualTo(fork.lineage());
        assertThat(inherited.byFileName()).containsExactly(java.util.Map.entry(sst, copy));
        // The fork's own cuts carry its lineage: they may reuse what it inherited.
        long epoch = table.shard(0).epoch();
        table.write(
                List.of(
                        new TableWrite.ShardOps(
                                0, epoch, List.of(put("k2", "x"), marker(2, false)))),
                x -> null);
        StoreCut forkCut = table.catalog().cut(table.catalog().cutIdOf(0, 2));
        assertThat(forkCut.lineage()).isEqualTo(fork.lineage());
        assertThat(table.catalog().cutsOfLineage(fork.lineage())).containsExactly(forkCut.id());
        assertThat(table.storeOfLineage(fork.lineage())).isSameAs(fork);
    }

    @Test
    void aStoreFromBeforeLineagesGetsOneAtStartAndKeepsIt() throws Exception {
        checkpoint("w1", 1);
        Path record = table.shard(0).store().dir().resolve(RangeStore.META_FILE);
        engine.close();
        List<String> older =
                Files.readAllLines(record).stream().filter(l -> !l.startsWith("lineage=")).toList();
        Files.write(record, older);

        engine = StorageEngine.open(Ops.smallOptions(dir));
        table = engine.tableStore("t");
        String given = table.shard(0).store().lineage();
        assertThat(given).isNotBlank();
        assertThat(Files.readString(record)).contains("lineage=" + given);
        engine.close();

        engine = StorageEngine.open(Ops.smallOptions(dir));
        table = engine.tableStore("t");
        assertThat(table.shard(0).store().lineage()).isEqualTo(given);
    }

    @Test
    void aCutsDurableIdIsGivenOnceAndFindsTheCutAfterARestart() throws Exception {
        StoreCut cut = checkpoint("w1", 1);
        String id = table.catalog().durableId(cut.id());
        assertThat(table.catalog().durableId(cut.id())).isEqualTo(id);
        engine.close();

        engine = StorageEngine.open(Ops.smallOptions(dir));
        table = engine.tableStore("t");
        long found = table.catalog().retainCutByDurableId(id);
        try {
            assertThat(found).isEqualTo(cut.id());
            assertThat(table.catalog().durableId(cut.id())).isEqualTo(id);
        } finally {
            table.catalog().release(found);
        }
        // Dropped with its last snapshot: the id names nothing any more.
        table.dropSnapshot(bits(0, 1), 1);
        assertThat(table.catalog().retainCutByDurableId(id)).isEqualTo(-1);
    }

    private static java.util.BitSet bits(int... shards) {
        java.util.BitSet b = new java.util.BitSet();
        for (int s : shards) {
            b.set(s);
        }
        return b;
    }
}
