package io.taishan.kv.server;

import static io.taishan.kv.server.DurableNode.read;
import static org.assertj.core.api.Assertions.assertThat;

import io.taishan.kv.client.DurableCut;
import io.taishan.kv.client.DurableFile;
import io.taishan.kv.client.DurableRestore;
import io.taishan.kv.client.DurableSnapshot;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.ShardRestore;
import io.taishan.kv.server.durable.S3TestStorage;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A node whose checkpoint storage is S3 (s3proxy in the test JVM, Flink's {@code
 * flink-s3-fs-hadoop} as a plugin): its snapshot's cuts go up as objects of the reported sizes, and
 * once its disk is lost it restores every key from them.
 */
class S3DurableSnapshotTest {
    private static final String TABLE = "t";
    private static final int SHARDS = 4;

    private static S3TestStorage s3;

    @TempDir Path tmp;

    @BeforeAll
    static void startS3() throws Exception {
        s3 = S3TestStorage.start();
    }

    @AfterAll
    static void stopS3() throws Exception {
        if (s3 != null) {
            s3.close();
        }
    }

    @Test
    void aNodeThatLostItsDiskRestoresEveryKeyFromS3() throws Exception {
        int[] all = IntStream.range(0, SHARDS).toArray();
        try (DurableNode node = new DurableNode(tmp.resolve("n"), s3.options())) {
            DurableSnapshot snapshot;
            Map<Integer, TreeMap<String, String>> atSnapshot;
            try (KvStore kv = node.connect()) {
                kv.createTable(TABLE, SHARDS);
                List<ShardLease> leases = kv.openShards(TABLE, all, "w", false);
                DurableNode.Model model = new DurableNode.Model(31);
                model.write(kv, leases, 200, 1_000);
                kv.snapshot(leases, 1, false);
                atSnapshot = model.copy();
                snapshot =
                        kv.durable()
                                .orElseThrow()
                                .uploadSnapshot(
                                        TABLE,
                                        1,
                                        all,
                                        S3TestStorage.s3("job/shared"),
                                        S3TestStorage.s3("job/chk-1"),
                                        Set.of());
                model.write(kv, leases, 10, 1_000);
            }
            DurableCut cut = snapshot.cuts().get(0);
            List<DurableFile> copies = new ArrayList<>(cut.files());
            copies.add(cut.metadataPack());
            long total = 0;
            for (DurableFile f : copies) {
                assertThat(f.path()).startsWith(S3TestStorage.s3("job/"));
                assertThat(
                                s3.blobs()
                                        .blobMetadata(
                                                S3TestStorage.BUCKET, S3TestStorage.key(f.path()))
                                        .getSize())
                        .isEqualTo(f.sizeBytes());
                total += f.sizeBytes();
            }
            assertThat(snapshot.uploadedBytes()).isEqualTo(total);

            node.loseDiskAndRestart();

            try (KvStore kv = node.connect()) {
                kv.createTable(TABLE, SHARDS);
                List<ShardRestore> restores = new ArrayList<>();
                for (int s : all) {
                    restores.add(new ShardRestore(s, TABLE, 1, cut.cutId()));
                }
                DurableRestore restored =
                        kv.durable()
                                .orElseThrow()
                                .restoreShards(TABLE, "w", restores, snapshot.cuts());
                assertThat(restored.downloadedBytes()).isEqualTo(total);
                assertThat(read(kv, restored.leases())).isEqualTo(atSnapshot);
            }
        }
    }
}
