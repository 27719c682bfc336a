package org.apache.flink.runtime.state;

import io.taishan.backend.TaishanStateBackend;
import io.taishan.kv.server.EmbeddedKvServer;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.core.fs.CloseableRegistry;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;
import org.apache.flink.runtime.operators.testutils.MockEnvironment;
import org.apache.flink.runtime.state.ttl.TtlTimeProvider;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;

/**
 * Flink's priority-queue suite on Taishan's REMOTE timers: a key-group partitioned queue over the
 * cached, byte-ordered sets in the store, created through the keyed backend as the timer service
 * creates it.
 */
public class TaishanPriorityQueueTest extends InternalPriorityQueueTestBase {
    private static EmbeddedKvServer server;
    private static MockEnvironment env;

    private final List<AbstractKeyedStateBackend<Long>> backends = new ArrayList<>();

    @BeforeAll
    static void startServer() {
        server = EmbeddedKvServer.start();
        env = MockEnvironment.builder().build();
    }

    @AfterAll
    static void stopServer() throws Exception {
        env.close();
        server.close();
    }

    @AfterEach
    void disposeBackends() {
        backends.forEach(AbstractKeyedStateBackend::dispose);
        backends.clear();
    }

    @Override
    protected InternalPriorityQueue<TestElement> newPriorityQueue(int initialCapacity) {
        try {
            JobID job = new JobID();
            int numberOfKeyGroups = KEY_GROUP_RANGE.getEndKeyGroup() + 1;
            AbstractKeyedStateBackend<Long> backend =
                    new TaishanStateBackend()
                            .setKvAddress(server.address())
                            .createKeyedStateBackend(
                                    new KeyedStateBackendParametersImpl<>(
                                            env,
                                            job,
                                            "test_op",
                                            LongSerializer.INSTANCE,
                                            numberOfKeyGroups,
                                            KEY_GROUP_RANGE,
                                            env.getTaskKvStateRegistry(),
                                            TtlTimeProvider.DEFAULT,
                                            new UnregisteredMetricsGroup(),
                                            List.of(),
                                            new CloseableRegistry()));
            backends.add(backend);
            return backend.create("queue", TestElementSerializer.INSTANCE);
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    @Override
    protected boolean testSetSemanticsAgainstDuplicateElements() {
        return true;
    }
}
