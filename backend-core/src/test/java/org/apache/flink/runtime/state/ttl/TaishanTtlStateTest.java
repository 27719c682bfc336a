package org.apache.flink.runtime.state.ttl;

import io.taishan.backend.TaishanStateBackend;
import io.taishan.kv.server.EmbeddedKvServer;
import org.apache.flink.runtime.state.CheckpointStorage;
import org.apache.flink.runtime.state.StateBackend;
import org.apache.flink.runtime.state.storage.JobManagerCheckpointStorage;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** Flink's state TTL suite on Taishan: TTL comes from Flink's wrappers over our states. */
public class TaishanTtlStateTest extends TtlStateTestBase {
    private static EmbeddedKvServer server;

    @BeforeAll
    static void startServer() {
        server = EmbeddedKvServer.start();
    }

    @AfterAll
    static void stopServer() {
        if (server != null) {
            server.close();
        }
    }

    @Override
    protected StateBackendTestContext createStateBackendTestContext(TtlTimeProvider timeProvider) {
        return new StateBackendTestContext(timeProvider) {
            @Override
            protected StateBackend createStateBackend() {
                return new TaishanStateBackend().setKvAddress(server.address());
            }

            @Override
            protected CheckpointStorage createCheckpointStorage() {
                return new JobManagerCheckpointStorage();
            }
        };
    }

    /**
     * Checkpoints are remote shard snapshots, not full rewrites of the state, so the full-snapshot
     * TTL cleanup (a transformer applied while writing a full snapshot) does not apply to them, as
     * for RocksDB's incremental checkpoints.
     */
    @Override
    public boolean isSavepoint() {
        return false;
    }
}
