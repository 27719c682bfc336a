package io.taishan.backend.remote;

import static org.assertj.core.api.Assertions.assertThat;

import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.server.EmbeddedKvServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class SharedKvStoresTest {
    private static EmbeddedKvServer server;

    @BeforeAll
    static void startServer() {
        server = EmbeddedKvServer.start();
    }

    @AfterAll
    static void stopServer() {
        server.close();
    }

    /**
     * A failover closes every subtask of a TaskManager, then deploys them again: the new ones take
     * the client the old ones let go of, instead of connecting anew.
     */
    @Test
    void aSubtaskDeployedRightAfterTheLastOneClosedTakesTheSameClient() {
        KvClientConfig config = KvClientConfig.forAddresses(server.address()).build();
        SharedKvStores.Handle first = SharedKvStores.acquire(config);
        KvStore before = first.store();
        first.close();

        SharedKvStores.Handle second = SharedKvStores.acquire(config);
        try {
            assertThat(second.store()).isSameAs(before);
            assertThat(second.store().listTables()).isNotNull();
        } finally {
            second.close();
        }
    }

    @Test
    void subtasksOpenAtOnceShareOneClient() {
        KvClientConfig config = KvClientConfig.forAddresses(server.address()).build();
        try (SharedKvStores.Handle a = SharedKvStores.acquire(config);
                SharedKvStores.Handle b = SharedKvStores.acquire(config)) {
            assertThat(a.store()).isSameAs(b.store());
        }
    }
}
