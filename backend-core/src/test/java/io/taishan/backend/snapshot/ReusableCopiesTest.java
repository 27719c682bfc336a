package io.taishan.backend.snapshot;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Set;
import org.apache.flink.runtime.checkpoint.SnapshotType.SharingFilesStrategy;
import org.junit.jupiter.api.Test;

/** Flink's RocksDB backend's reuse rule, notification by notification. */
class ReusableCopiesTest {
    private static final SharingFilesStrategy INCREMENTAL = SharingFilesStrategy.FORWARD_BACKWARD;

    @Test
    void onlyTheLastConfirmedCheckpointsCopiesAreReusable() {
        ReusableCopies copies = new ReusableCopies();
        assertThat(copies.reusableFor(INCREMENTAL)).isEmpty();

        copies.referenced(1, INCREMENTAL, Set.of("a", "b"));
        // Not confirmed yet: the JobManager may still abort it and delete its files.
        assertThat(copies.reusableFor(INCREMENTAL)).isEmpty();
        copies.completed(1);
        assertThat(copies.reusableFor(INCREMENTAL)).containsExactlyInAnyOrder("a", "b");

        copies.referenced(2, INCREMENTAL, Set.of("b", "c"));
        copies.referenced(3, INCREMENTAL, Set.of("c", "d"));
        assertThat(copies.reusableFor(INCREMENTAL)).containsExactlyInAnyOrder("a", "b");
        // A lost notification of 2: 3's confirms the newer base directly.
        copies.completed(3);
        assertThat(copies.reusableFor(INCREMENTAL)).containsExactlyInAnyOrder("c", "d");
        // A late notification of an older one never moves the base back.
        copies.completed(2);
        assertThat(copies.reusableFor(INCREMENTAL)).containsExactlyInAnyOrder("c", "d");
    }

    /** FLINK-23949: a savepoint's or unknown id must not reset the base to nothing. */
    @Test
    void aCompletionOfAnUnrecordedIdKeepsTheBase() {
        ReusableCopies copies = new ReusableCopies();
        copies.referenced(1, INCREMENTAL, Set.of("a"));
        copies.completed(1);
        copies.referenced(2, SharingFilesStrategy.NO_SHARING, Set.of("savepoint-copy"));

        copies.completed(2);
        copies.completed(7);

        assertThat(copies.reusableFor(INCREMENTAL)).containsExactly("a");
    }

    @Test
    void anAbortedCheckpointIsNeverTheBase() {
        ReusableCopies copies = new ReusableCopies();
        copies.referenced(1, INCREMENTAL, Set.of("a"));
        copies.completed(1);
        copies.referenced(2, INCREMENTAL, Set.of("b"));

        copies.aborted(2);
        copies.completed(2);

        assertThat(copies.reusableFor(INCREMENTAL)).containsExactly("a");
    }

    /**
     * A full checkpoint (the first after a NO_CLAIM restore) and a native savepoint reuse nothing;
     * the full checkpoint's own copies are a base for the next one.
     */
    @Test
    void fullCheckpointsAndSavepointsReuseNothing() {
        ReusableCopies copies = new ReusableCopies();
        copies.restored(4, Set.of("restored"));
        assertThat(copies.reusableFor(INCREMENTAL)).containsExactly("restored");
        assertThat(copies.reusableFor(SharingFilesStrategy.FORWARD)).isEmpty();
        assertThat(copies.reusableFor(SharingFilesStrategy.NO_SHARING)).isEmpty();

        copies.referenced(5, SharingFilesStrategy.FORWARD, Set.of("full"));
        copies.completed(5);

        assertThat(copies.reusableFor(INCREMENTAL)).containsExactly("full");
    }
}
