package io.taishan.it.soak;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.DoubleUnaryOperator;
import org.junit.jupiter.api.Test;

/**
 * The soak's verdict on made-up curves, without a cluster: a flat run holds every bound, and each
 * kind of growth the bounds are meant to catch (a leak of file descriptors, a snapshot never
 * released, the MANIFEST growth the first soak run found) fails the right one.
 */
class SoakBoundsTest {
    private static final int SHARDS = 128;

    @Test
    void aFlatRunHoldsEveryBound() {
        List<SoakBounds.Check> checks = SoakBounds.check(run(t -> 0, 1), 1);
        assertThat(checks).allMatch(SoakBounds.Check::holds);
    }

    @Test
    void aLinearLeakOfTheServersFileDescriptorsIsCaught() {
        // 900 fds growing by 1 a second: +300 between the quarters' medians of a 20-min run.
        SoakBounds.Check fds = only(SoakBounds.check(run(t -> t, 1), 1), "open file descriptors");
        assertThat(fds.holds()).isFalse();
        assertThat(fds.measured()).contains("second quarter");
        assertThat(fds.curve()).startsWith("server_fds: t=0s:900");
    }

    @Test
    void aSnapshotNeverReleasedIsCaught() {
        SoakCurve curve = new SoakCurve(SoakSampler.COLUMNS);
        for (int t = 0; t <= 1200; t += 5) {
            Map<String, Double> row = flatRow(t, 1);
            // Checkpoint 5 stays on the server for good.
            row.put("kv_oldest_snapshot_id", Math.min(t, 5.0));
            curve.append(row);
        }
        List<SoakBounds.Check> checks = SoakBounds.check(curve, 1);
        assertThat(only(checks, "release lag: ").holds()).isFalse();
        assertThat(only(checks, "release lag, median").holds()).isFalse();
        assertThat(only(checks, "release lag: ").measured()).isEqualTo("1,195");
    }

    @Test
    void aManifestGrowingWithEveryCheckpointIsCaughtInTwentyMinutes() {
        // As the first soak run measured before the fix: 17 MiB growing by ~1.75 MiB a minute.
        SoakCurve curve = new SoakCurve(SoakSampler.COLUMNS);
        for (int t = 0; t <= 1200; t += 5) {
            Map<String, Double> row = flatRow(t, 1);
            row.put("disk_mib", 17 + 1.75 * t / 60);
            curve.append(row);
        }
        assertThat(only(SoakBounds.check(curve, 1), "data dir").holds()).isFalse();
    }

    @Test
    void aFailedCheckpointOnceRunningIsCaughtButDeclinesAtTheStartAreNot() {
        SoakCurve curve = new SoakCurve(SoakSampler.COLUMNS);
        for (int t = 0; t <= 1200; t += 5) {
            Map<String, Double> row = flatRow(t, 1);
            row.put("checkpoints_completed", t < 20 ? 0.0 : t - 19.0);
            row.put("checkpoints_failed", t < 20 ? t / 2.0 : t > 600 ? 11.0 : 10.0);
            curve.append(row);
        }
        SoakBounds.Check failed = only(SoakBounds.check(curve, 1), "failed checkpoints");
        assertThat(failed.holds()).isFalse();
        assertThat(failed.measured()).startsWith("1 (10 declined");
    }

    private static SoakCurve run(DoubleUnaryOperator fdGrowth, int releaseLag) {
        SoakCurve curve = new SoakCurve(SoakSampler.COLUMNS);
        for (int t = 0; t <= 1200; t += 5) {
            Map<String, Double> row = flatRow(t, releaseLag);
            row.put("server_fds", 900 + fdGrowth.applyAsDouble(t));
            curve.append(row);
        }
        return curve;
    }

    /** A healthy sample at t seconds: checkpoint t the latest, {@code releaseLag} still held. */
    private static Map<String, Double> flatRow(int t, int releaseLag) {
        Map<String, Double> row = new LinkedHashMap<>();
        row.put(SoakCurve.TIME, (double) t);
        row.put(SoakCurve.RUNNING, 1.0);
        row.put("checkpoints_completed", (double) t);
        row.put("checkpoints_failed", 0.0);
        row.put("last_checkpoint_age_s", 0.5);
        row.put("kv_shards", (double) SHARDS);
        row.put("last_checkpoint_id", (double) t);
        row.put("kv_oldest_snapshot_id", (double) Math.max(0, t - releaseLag));
        row.put("kv_snapshot_ids", releaseLag + 2.0);
        row.put("kv_shard_snapshots", (releaseLag + 2.0) * SHARDS);
        row.put("server_fds", 900.0);
        row.put("server_threads", 48.0);
        row.put("server_rss_mib", 280.0);
        row.put("server_heap_live_mib", 30.0);
        row.put("disk_mib", 20.0);
        return row;
    }

    private static SoakBounds.Check only(List<SoakBounds.Check> checks, String what) {
        List<SoakBounds.Check> matching =
                checks.stream().filter(c -> c.what().contains(what)).toList();
        assertThat(matching).as("checks named %s", what).hasSize(1);
        return matching.get(0);
    }
}
