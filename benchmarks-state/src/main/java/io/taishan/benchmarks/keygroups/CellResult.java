package io.taishan.benchmarks.keygroups;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import javax.annotation.Nullable;

/**
 * What one cell of the key-group scaling run measured (one backend, one key-group count, one
 * parallelism), as written to its JSON file by {@link KeyGroupScaling} and read back by the report.
 *
 * @param stateProcess where the footprint figures come from ({@code kv-server child JVM}, {@code
 *     task JVM})
 * @param rescaleTo the parallelism of the rescaled restore
 * @param failure the first phase that failed or timed out, as {@code "<phase>: <outcome>:
 *     <reason>"}; null when every phase of every repetition passed. The cell stops there.
 */
public record CellResult(
        String backend,
        String description,
        String stateProcess,
        int keyGroups,
        int parallelism,
        int rescaleTo,
        String data,
        Settings settings,
        int cores,
        String loadAverageStart,
        String loadAverageEnd,
        String startedAt,
        double seconds,
        List<Repetition> repetitions,
        @Nullable String failure) {

    /** The phases in the order run; the report's columns use these names. */
    public static final String START = "start";

    public static final String OPEN = "open";
    public static final String LOAD = "load";
    public static final String CHECKPOINT = "checkpoint";
    public static final String CHANGE = "change";
    public static final String INCREMENTAL_CHECKPOINT = "incremental checkpoint";
    public static final String FAILOVER = "failover";
    public static final String RESTORE = "restore";
    public static final String RESCALE = "rescale restore";
    public static final String TEARDOWN = "teardown";

    public static final List<String> PHASES =
            List.of(
                    START,
                    OPEN,
                    LOAD,
                    CHECKPOINT,
                    CHANGE,
                    INCREMENTAL_CHECKPOINT,
                    FAILOVER,
                    RESTORE,
                    RESCALE,
                    TEARDOWN);

    public static final String OK = "ok";
    public static final String FAILED = "failed";
    public static final String TIMED_OUT = "timed out";

    /** The run's parameters, the same for every cell of a run. */
    public record Settings(
            int keys,
            int valueBytes,
            int mapEntries,
            int changed,
            int verify,
            int repetitions,
            long phaseTimeoutSeconds) {}

    /**
     * One pass through all phases on a fresh backend (for Taishan a new table on the cell's
     * kv-server); the first of several is a warm-up, kept here but left out of the figures.
     */
    public record Repetition(int number, boolean warmUp, List<PhaseResult> phases) {}

    /**
     * One phase of one repetition.
     *
     * @param millis the phase's measured time (its start and stop points are in the README)
     * @param parts named parts of it or steps around it that are not in {@code millis} (e.g. {@code
     *     create}: until {@code createKeyedStateBackend} returned; {@code verify}: the check of a
     *     restore's sample after it was ready)
     * @param rpcs the server calls the phase made, by kind (empty without a server)
     * @param footprint the state's process and directory right after the phase
     * @param sizes byte and file counts of a checkpoint ({@code stateSize}, {@code
     *     checkpointedSize}, {@code checkpointDirBytes}, {@code checkpointDirFiles}) or of a
     *     restore's check ({@code keysVerified})
     */
    public record PhaseResult(
            String phase,
            String outcome,
            @Nullable String reason,
            double millis,
            Map<String, Double> parts,
            Map<String, Long> rpcs,
            @Nullable Footprint footprint,
            Map<String, Long> sizes) {
        public boolean ok() {
            return OK.equals(outcome);
        }

        public long rpcTotal() {
            return rpcs.values().stream().mapToLong(Long::longValue).sum();
        }
    }

    private static final Gson GSON =
            new GsonBuilder().setPrettyPrinting().serializeSpecialFloatingPointValues().create();

    public void write(Path file) throws IOException {
        Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
        Files.writeString(tmp, GSON.toJson(this));
        Files.move(
                tmp,
                file,
                java.nio.file.StandardCopyOption.REPLACE_EXISTING,
                java.nio.file.StandardCopyOption.ATOMIC_MOVE);
    }

    public static CellResult read(Path file) throws IOException {
        return GSON.fromJson(Files.readString(file), CellResult.class);
    }

    /** Every cell's {@code .json} file in {@code dir}, in the order of their names. */
    public static List<CellResult> readAll(Path dir) throws IOException {
        List<CellResult> cells = new ArrayList<>();
        try (Stream<Path> files = Files.list(dir)) {
            for (Path f : files.filter(p -> p.toString().endsWith(".json")).sorted().toList()) {
                cells.add(read(f));
            }
        }
        return cells;
    }

    /** All cells of a run as one JSON array. */
    public static String toJson(List<CellResult> cells) {
        return GSON.toJson(cells);
    }
}
