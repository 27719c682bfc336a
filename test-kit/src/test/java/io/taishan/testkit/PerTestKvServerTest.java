package io.taishan.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import io.taishan.kv.server.EmbeddedKvServer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The extension on an instance field: each test gets a server of its own, started before it and
 * stopped, its temporary data directory deleted, after it.
 */
class PerTestKvServerTest {
    private static final List<Path> DATA_DIRS = new ArrayList<>();
    private static final List<String> ADDRESSES = new ArrayList<>();

    @RegisterExtension final TaishanKvServerExtension kvServer = new TaishanKvServerExtension();

    @Test
    void first(EmbeddedKvServer server) {
        checkOwn(server);
    }

    @Test
    void second(EmbeddedKvServer server) {
        checkOwn(server);
    }

    private void checkOwn(EmbeddedKvServer server) {
        assertThat(server).isSameAs(kvServer.server());
        assertThat(server.dataDir()).isDirectory();
        // Nothing left from the other test's server.
        assertThat(kvServer.kvStore().listTables()).isEmpty();
        kvServer.kvStore().createTable("per_test", 1);
        DATA_DIRS.forEach(d -> assertThat(d).as("an earlier test's server").doesNotExist());
        assertThat(ADDRESSES).doesNotContain(server.address());
        DATA_DIRS.add(server.dataDir());
        ADDRESSES.add(server.address());
    }

    @AfterAll
    static void everyServerWasStoppedAndItsDataDeleted() {
        assertThat(DATA_DIRS).hasSize(2);
        assertThat(DATA_DIRS).allSatisfy(d -> assertThat(Files.exists(d)).isFalse());
    }
}
