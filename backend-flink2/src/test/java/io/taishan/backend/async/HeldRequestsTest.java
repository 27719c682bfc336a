package io.taishan.backend.async;

import static org.assertj.core.api.Assertions.assertThat;

import io.taishan.backend.TaishanOptions;
import io.taishan.kv.server.EmbeddedKvServer;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.state.v2.ValueState;
import org.apache.flink.api.common.state.v2.ValueStateDescriptor;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.operators.testutils.MockEnvironment;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Only the records whose reads miss wait for the fetch: the others of the same batch are answered
 * at once, and each key's requests still run in the order its record made them.
 */
class HeldRequestsTest {
    private static EmbeddedKvServer server;
    private static MockEnvironment env;

    @BeforeAll
    static void start() {
        server = EmbeddedKvServer.start();
        env = MockEnvironment.builder().build();
    }

    @AfterAll
    static void stop() throws Exception {
        env.close();
        server.close();
    }

    @Test
    void recordsThatHitDoNotWaitForAnotherRecordsFetch() throws Exception {
        Configuration config = new Configuration();
        config.set(TaishanOptions.KV_ADDRESS, server.address());
        config.set(TaishanOptions.CACHE_TYPE, "none");
        try (AsyncOperatorRig rig =
                new AsyncOperatorRig(env, new JobID(), 16, config, 100, List.of())) {
            ValueState<Long> value =
                    rig.state(new ValueStateDescriptor<>("v", LongSerializer.INSTANCE));
            rig.record(1, () -> value.asyncUpdate(10L));
            rig.checkpoint(1); // key 1 on the server only: without a cache, reading it misses

            List<String> answered = new ArrayList<>();
            // One batch: key 1 misses; key 2's read is answered by its own pending write; key 1's
            // write after its read must not be seen by that read.
            rig.record(
                    1,
                    () -> {
                        value.asyncValue().thenAccept(v -> answered.add("1:" + v));
                        value.asyncUpdate(11L);
                    });
            rig.record(
                    2,
                    () -> {
                        value.asyncUpdate(20L);
                        value.asyncValue().thenAccept(v -> answered.add("2:" + v));
                    });
            rig.drain();
            assertThat(answered).containsExactly("2:20", "1:10");
            assertThat(rig.readMetrics().batchedFetches()).isEqualTo(1);

            List<Long> after = new ArrayList<>();
            rig.record(1, () -> value.asyncValue().thenAccept(after::add));
            rig.drain();
            assertThat(after).containsExactly(11L);
        }
    }
}
