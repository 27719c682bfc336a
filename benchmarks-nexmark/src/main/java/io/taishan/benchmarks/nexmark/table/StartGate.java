package io.taishan.benchmarks.nexmark.table;

import java.util.concurrent.CountDownLatch;

/**
 * Holds the source's first event until the harness has seen every subtask of the job RUNNING, so
 * that the processing time it measures starts with the whole job up: otherwise a source could fill
 * the network buffers in front of a keyed operator that is still creating its state backend, and a
 * selective query could be half done before its measured time began. The MiniCluster runs in the
 * harness's JVM, with no user-code jar, so the job's classes are the harness's and this latch is
 * shared. Only a table created with {@code 'start-gate' = 'true'} waits here.
 */
public final class StartGate {
    private static final CountDownLatch OPEN = new CountDownLatch(1);

    private StartGate() {}

    public static void open() {
        OPEN.countDown();
    }

    static void await() throws InterruptedException {
        OPEN.await();
    }
}
