package io.taishan.kv.server;

import static io.taishan.kv.server.KvStoreEndToEndTest.b;
import static org.assertj.core.api.Assertions.assertThat;

import io.taishan.bloom.KeyHash;
import io.taishan.kv.client.CloseableIterator;
import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvEntry;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.KvStores;
import io.taishan.kv.client.ShardFilter;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.WriteBatch;
import io.taishan.kv.protocol.ScanRange;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code WriteBatch.putScanOnly} through the real service: the key is stored, read and scanned as
 * any put, and left out of the shard's Bloom filter, which still holds every normal put.
 */
class ScanOnlyPutTest {
    /**
     * Fewer than a floor-sized filter takes before it asks for a rebuild: a rebuild scans every key
     * of the shard, scan-only ones too (the server cannot tell them apart on disk), so what is
     * checked here is the write path alone.
     */
    private static final int NORMAL = 40;

    private static final int SCAN_ONLY = 3000;

    @TempDir Path dataDir;

    @Test
    void aScanOnlyKeyIsReadAndScannedButNotInTheFilter() {
        try (EmbeddedKvServer server =
                        EmbeddedKvServer.start(
                                KvServerConfig.builder().dataDir(dataDir).port(0).build());
                KvStore kv =
                        KvStores.connect(KvClientConfig.forAddresses(server.address()).build())) {
            kv.createTable("t", 4);
            ShardLease lease = kv.openShard("t", 2);
            WriteBatch batch = new WriteBatch("t");
            for (int i = 0; i < NORMAL; i++) {
                batch.put(lease, normal(i), b("v" + i));
            }
            for (int i = 0; i < SCAN_ONLY; i++) {
                batch.putScanOnly(lease, timer(i), new byte[0]);
            }
            kv.write(batch);
            kv.write(new WriteBatch("t").putScanOnly(lease, b("t-with-value"), b("x")));

            assertThat(kv.get(lease, timer(7))).isEmpty();
            assertThat(kv.get(lease, b("t-with-value"))).isEqualTo(b("x"));
            assertThat(kv.get(lease, normal(7))).isEqualTo(b("v7"));
            assertThat(kv.multiGet(lease, List.of(timer(1), normal(1), b("absent"))))
                    .containsExactly(new byte[0], b("v1"), null);
            List<String> scanned = new ArrayList<>();
            try (CloseableIterator<KvEntry> it =
                    kv.scan(lease, ScanRange.prefix(b("t-")), 500, true)) {
                while (it.hasNext()) {
                    scanned.add(new String(it.next().key(), StandardCharsets.UTF_8));
                }
            }
            assertThat(scanned).hasSize(SCAN_ONLY + 1).isSorted();

            try (ShardFilter filter = FilterEndToEndTest.fetch(kv, lease)) {
                for (int i = 0; i < NORMAL; i++) {
                    assertThat(filter.filter().mightContain(KeyHash.hash(normal(i))))
                            .as("normal put %d", i)
                            .isTrue();
                }
                int maybe = 0;
                for (int i = 0; i < SCAN_ONLY; i++) {
                    if (filter.filter().mightContain(KeyHash.hash(timer(i)))) {
                        maybe++;
                    }
                }
                // Inserted, all would be "maybe"; left out, only false positives are, and the
                // filter (sized for far more keys than it holds) has almost none.
                assertThat(maybe).isLessThanOrEqualTo(SCAN_ONLY / 100);
            }
        }
    }

    private static byte[] normal(int i) {
        return b(String.format("n-%06d", i));
    }

    private static byte[] timer(int i) {
        return b(String.format("t-%06d", i));
    }
}
