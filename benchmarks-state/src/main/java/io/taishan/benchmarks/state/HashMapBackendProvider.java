package io.taishan.benchmarks.state;

import java.util.Set;
import org.apache.flink.runtime.state.StateBackend;
import org.apache.flink.runtime.state.hashmap.HashMapStateBackend;

/** {@code HASHMAP}: Flink's {@code HashMapStateBackend}, objects on the task's heap. */
public final class HashMapBackendProvider implements BenchmarkBackendProvider {
    public static final String HASHMAP = "HASHMAP";

    @Override
    public Set<String> backends() {
        return Set.of(HASHMAP);
    }

    @Override
    public BackendUnderTest open(String backend, BackendSettings settings) {
        HashMapStateBackend hashMap = new HashMapStateBackend();
        return new BackendUnderTest() {
            @Override
            public StateBackend stateBackend() {
                return hashMap;
            }

            @Override
            public String description() {
                return "HashMapStateBackend";
            }

            @Override
            public void close() {}
        };
    }
}
