package io.taishan.snapshot.gc;

import io.taishan.snapshot.ShardSnapshotRef;
import java.io.PrintStream;
import java.util.List;

/**
 * The text that {@link KeptSnapshotsMain} hands to the admin CLI's {@code gc}, which reads it in
 * another JVM (without Flink): tab-separated lines, a header with a format version, each kept
 * checkpoint followed by the shard snapshots it references, and a trailer with both counts, so that
 * a list cut short is refused instead of dropping what its lost lines named.
 *
 * <pre>
 * taishan-kept-snapshots  1
 * checkpoint  &lt;id&gt;  &lt;kind words&gt;  &lt;taishan states&gt;  &lt;other states&gt;  &lt;location&gt;
 * snapshot    &lt;table&gt;  &lt;shard&gt;  &lt;snapshot id&gt;
 * end         &lt;checkpoints&gt;  &lt;snapshots&gt;
 * </pre>
 *
 * The admin's parser ({@code io.taishan.kv.admin.KeptSnapshots}) is the other half; the integration
 * test that runs {@code bin/taishan-kv-admin gc} holds the two together.
 */
public final class KeptSnapshotsList {
    public static final String HEADER = "taishan-kept-snapshots";
    public static final int VERSION = 1;

    private KeptSnapshotsList() {}

    public static void write(List<KeptCheckpoint> kept, PrintStream out) {
        out.println(HEADER + '\t' + VERSION);
        int snapshots = 0;
        for (KeptCheckpoint checkpoint : kept) {
            out.println(
                    String.join(
                            "\t",
                            "checkpoint",
                            Long.toString(checkpoint.checkpointId()),
                            checkpoint.kind().words(),
                            Integer.toString(checkpoint.taishanStates()),
                            Integer.toString(checkpoint.otherStates()),
                            checkpoint.location()));
            for (ShardSnapshotRef ref : checkpoint.references()) {
                out.println(
                        String.join(
                                "\t",
                                "snapshot",
                                ref.table(),
                                Integer.toString(ref.shard()),
                                Long.toString(ref.snapshotId())));
                snapshots++;
            }
        }
        out.println("end\t" + kept.size() + '\t' + snapshots);
        out.flush();
    }
}
