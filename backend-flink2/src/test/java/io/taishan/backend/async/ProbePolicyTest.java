package io.taishan.backend.async;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** When batches skip their probe pass, and when they get it back. */
class ProbePolicyTest {
    @Test
    void batchesRunDirectlyOnlyAfterQuietProbesAndRecheckNow() {
        ProbePolicy policy = new ProbePolicy();
        for (int i = 0; i < ProbePolicy.QUIET_PROBES - 1; i++) {
            assertThat(policy.probeNext()).isTrue();
            policy.probed(0);
        }
        assertThat(policy.direct()).isFalse();
        policy.probed(0);
        assertThat(policy.direct()).isTrue();

        int probedOf = 0;
        for (int i = 0; i < 10 * ProbePolicy.RECHECK_EVERY; i++) {
            if (policy.probeNext()) {
                probedOf++;
                policy.probed(0);
            } else {
                policy.ranDirect(0);
            }
        }
        assertThat(probedOf).isEqualTo(10);
        assertThat(policy.direct()).isTrue();
    }

    @Test
    void aMissTurnsProbingBackOn() {
        ProbePolicy policy = quiet();
        assertThat(policy.probeNext()).isFalse();
        policy.ranDirect(3);
        assertThat(policy.direct()).isFalse();
        assertThat(policy.probeNext()).isTrue();

        policy = quiet();
        while (!policy.probeNext()) {
            policy.ranDirect(0);
        }
        policy.probed(5);
        assertThat(policy.direct()).isFalse();
        // Quiet again from scratch: one quiet probe is not enough.
        policy.probed(0);
        assertThat(policy.direct()).isFalse();
    }

    private static ProbePolicy quiet() {
        ProbePolicy policy = new ProbePolicy();
        for (int i = 0; i < ProbePolicy.QUIET_PROBES; i++) {
            policy.probed(0);
        }
        return policy;
    }
}
