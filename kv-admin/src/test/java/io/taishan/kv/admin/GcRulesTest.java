package io.taishan.kv.admin;

import static org.assertj.core.api.Assertions.assertThat;

import io.taishan.kv.client.TableInfo;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** {@code gc}'s command line and its rule for running jobs' tables, without a server. */
class GcRulesTest {
    @Test
    void badCommandLinesAreUsageErrors() {
        List<String[]> bad =
                List.of(
                        new String[] {"gc", "--keep-none"},
                        new String[] {"gc", "--table-prefix", "gc_x_"},
                        new String[] {"gc", "--table-prefix", "", "--keep-none"},
                        new String[] {
                            "gc", "--table-prefix", "gc_x_", "--keep-none", "--keep", "x"
                        },
                        new String[] {
                            "gc", "--table-prefix", "gc_x_", "--keep", "x", "--kept-snapshots", "y"
                        },
                        new String[] {
                            "gc", "--table-prefix", "gc_x_", "--keep-none", "--min-idle", "10"
                        },
                        new String[] {"tables", "--keep", "x"},
                        new String[] {"drop-table", "gc_x_done", "--table-prefix", "gc_x_"});
        for (String[] args : bad) {
            AdminRun r = admin(args);
            assertThat(r.exit()).as(String.join(" ", args)).isEqualTo(KvAdminMain.EXIT_USAGE);
            assertThat(r.err()).as(String.join(" ", args)).contains("usage: taishan-kv-admin");
        }
    }

    @Test
    void theRuleForRunningJobs() {
        TableInfo info = new TableInfo("t", 1, 0);
        long now = 10_000_000;
        Map<GcPlan.ShardId, Set<String>> none = Map.of();
        Duration hour = Duration.ofHours(1);

        assertThat(GcPlan.action(state(info, now - 1), none, hour, now))
                .isEqualTo(GcPlan.Action.SKIP_ACTIVE);
        assertThat(GcPlan.action(state(info, now - hour.toMillis()), none, hour, now))
                .isEqualTo(GcPlan.Action.DROP_TABLE);
        assertThat(GcPlan.action(state(info, -1), none, hour, now))
                .isEqualTo(GcPlan.Action.SKIP_ACTIVITY_UNKNOWN);
        assertThat(GcPlan.action(state(info, -1), none, Duration.ZERO, now))
                .isEqualTo(GcPlan.Action.DROP_TABLE);
        assertThat(
                        GcPlan.action(
                                state(info, now - hour.toMillis()),
                                Map.of(new GcPlan.ShardId(0, 1), Set.of("checkpoint 1")),
                                hour,
                                now))
                .isEqualTo(GcPlan.Action.DROP_SNAPSHOTS);
    }

    private static GcPlan.TableState state(TableInfo info, long lastActive) {
        return new GcPlan.TableState(info, lastActive, List.of());
    }

    /** Usage errors are found before anything connects, so no server is needed. */
    private static AdminRun admin(String... command) {
        return AdminRun.of("127.0.0.1:1", command);
    }
}
