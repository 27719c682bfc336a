package io.taishan.benchmarks.state;

/** The keyed state backends compared in one run (the JMH parameter {@code backend}). */
public enum BackendKind {
    /** Flink's {@code HashMapStateBackend}: objects on the task's heap, the baseline. */
    HASHMAP,
    /** {@code TaishanStateBackend} on a kv-server in a child JVM over loopback gRPC. */
    TAISHAN
}
