package io.taishan.it.harness;

import io.taishan.it.job.KeyFinalState;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

/** Compares two runs key by key and, when they differ, says where, readably. */
public final class FinalStates {
    private static final int SHOWN_DIFFERENCES = 5;

    private FinalStates() {}

    public static void assertSame(
            Map<Long, KeyFinalState> actual, Map<Long, KeyFinalState> expected, String what) {
        TreeSet<Long> keys = new TreeSet<>(expected.keySet());
        keys.addAll(actual.keySet());
        List<String> differences = new ArrayList<>();
        int differing = 0;
        for (long key : keys) {
            KeyFinalState want = expected.get(key);
            KeyFinalState got = actual.get(key);
            if (want == null || !want.equals(got)) {
                differing++;
                if (differences.size() < SHOWN_DIFFERENCES) {
                    differences.add("key " + key + "\n  expected " + want + "\n  actual   " + got);
                }
            }
        }
        if (differing > 0) {
            throw new AssertionError(
                    what
                            + ": "
                            + differing
                            + " of "
                            + keys.size()
                            + " keys differ (expected "
                            + expected.size()
                            + " keys, got "
                            + actual.size()
                            + "); first ones:\n"
                            + String.join("\n", differences));
        }
    }
}
