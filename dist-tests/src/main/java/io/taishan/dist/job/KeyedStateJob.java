package io.taishan.dist.job;

import java.util.HashMap;
import java.util.Map;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * The job a test submits to a standalone cluster through Flink's CLI: a bounded number sequence
 * ({@code fromSequence}, whose splits keep their exact position in every checkpoint), paced by
 * {@link Pacer}, keyed by {@link Schedule#key}, {@link KeyStateFunction}, final states to files.
 * The state backend is whatever the cluster's configuration names; the job sets none.
 *
 * <pre>
 * run -d taishan-dist-tests.jar --keys K --records-per-key R --out DIR
 *     --records-per-second-per-subtask N --release-file FILE
 * </pre>
 *
 * Writes {@code DIR/final/key-<k>} once the input has ended and {@code DIR/opened/subtask-..}
 * whenever a keyed subtask opens.
 */
public final class KeyedStateJob {
    public static final String SOURCE_UID = "sequence-source";
    public static final String STATE_UID = "key-state";
    public static final String SINK_UID = "final-state-files";

    private KeyedStateJob() {}

    public static void main(String[] args) throws Exception {
        Map<String, String> params = parse(args);
        Schedule schedule =
                new Schedule(
                        Integer.parseInt(required(params, "keys")),
                        Integer.parseInt(required(params, "records-per-key")));
        String out = required(params, "out");
        double rate = Double.parseDouble(required(params, "records-per-second-per-subtask"));
        String releaseFile = required(params, "release-file");

        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.fromSequence(0, schedule.records() - 1)
                .uid(SOURCE_UID)
                .name("sequence-source")
                .map(new Pacer(rate, releaseFile))
                .name("pacer")
                .keyBy(schedule::key, Types.LONG)
                .transform(
                        "key-state",
                        Types.STRING,
                        new RecordingKeyedProcessOperator<>(
                                new KeyStateFunction(), out + "/opened"))
                .uid(STATE_UID)
                .sinkTo(new FinalStateFileSink(out + "/final"))
                .uid(SINK_UID)
                .name("final-state-files");
        env.execute("taishan-keyed-state-job");
    }

    private static Map<String, String> parse(String[] args) {
        Map<String, String> params = new HashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            if (!args[i].startsWith("--")) {
                throw new IllegalArgumentException("expected --name value, got " + args[i]);
            }
            params.put(args[i].substring(2), args[i + 1]);
        }
        return params;
    }

    private static String required(Map<String, String> params, String name) {
        String value = params.get(name);
        if (value == null) {
            throw new IllegalArgumentException("missing --" + name);
        }
        return value;
    }
}
