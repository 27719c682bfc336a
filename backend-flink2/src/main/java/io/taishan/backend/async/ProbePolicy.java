package io.taishan.backend.async;

/**
 * Whether the next batch of state requests gets a probe pass ({@link TaishanStateExecutor}), or
 * runs at once, as Flink's adaptor for synchronous backends runs it.
 *
 * <p>A probe pass is a read chain lookup per read (cache, pending writes, Bloom filter) before the
 * batch runs, so it pays only when some reads would go to the server. When the state sits in the
 * read cache, or its keys are new, no probe finds a miss and each costs the operator a second
 * lookup per read (on Nexmark q4, where the state stays cached, probes took 11.7% of the operator
 * thread's profile samples). So after {@link #QUIET_PROBES} probes in a row without a miss, batches
 * run directly; one in {@link #RECHECK_EVERY} is still probed, and a direct batch whose reads went
 * to the server turns probing back on at once.
 *
 * <p>Cost model: in direct mode a batch's misses are read one {@code Get} each, on the task thread,
 * as the synchronous backend reads them. That happens for at most the one batch in which misses
 * come back: every batch after it is probed again. Task thread only.
 */
final class ProbePolicy {
    static final int QUIET_PROBES = 8;
    static final int RECHECK_EVERY = 64;

    private int quietProbes;
    private boolean direct;
    private int directBatches;

    /** Whether to probe the next batch. */
    boolean probeNext() {
        return !direct || ++directBatches % RECHECK_EVERY == 0;
    }

    /** A probed batch found {@code misses} reads for the server. */
    void probed(int misses) {
        if (misses > 0) {
            quietProbes = 0;
            direct = false;
        } else if (++quietProbes >= QUIET_PROBES) {
            direct = true;
        }
    }

    /** A batch ran without a probe, and its reads asked the server {@code remoteGets} times. */
    void ranDirect(long remoteGets) {
        if (remoteGets > 0) {
            quietProbes = 0;
            direct = false;
        }
    }

    boolean direct() {
        return direct;
    }
}
