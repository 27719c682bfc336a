package io.taishan.benchmarks.nexmark.table;

import io.taishan.benchmarks.nexmark.NexmarkAccumulators;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.flink.api.common.accumulators.LongCounter;
import org.apache.flink.api.common.accumulators.LongMaximum;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.types.RowKind;

/**
 * Keeps the result table that a query's changelog describes, as a digest that does not depend on
 * the order of the changes nor on which subtask saw them: each row is hashed (SHA-256 of its fields
 * as text, first 128 bits), an insert or update-after adds the hash and a retraction
 * (update-before, delete) subtracts it, modulo 2^64 per half. Flink retracts only rows it emitted
 * before, so what is left is the sum over the rows of the final result, which equals the sum
 * computed from that same table sorted and hashed row by row, in constant memory. The sums of all
 * subtasks add up in Flink's {@code LongCounter} accumulators, which wrap as the modular sums need.
 *
 * <p>With a dump dir it also counts every row's text in memory and writes each row's net count at
 * the end to {@code part-<subtask>} ({@code count TAB row}); a retraction may reach another subtask
 * than its insert, so only the sum over the parts is the result ({@code NexmarkRun} merges them).
 */
final class ResultSink extends RowSinkFunction {
    private static final long serialVersionUID = 1L;
    private static final char FIELD_SEPARATOR = '\u001f';

    private final List<LogicalType> types;
    private final String dumpDir;
    private transient RowData.FieldGetter[] getters;
    private transient MessageDigest sha256;
    private transient StringBuilder text;
    private transient LongCounter changes;
    private transient LongCounter rows;
    private transient LongCounter digestHigh;
    private transient LongCounter digestLow;
    private transient LongMaximum finishedMillis;
    private transient Map<String, Long> dump;

    ResultSink(List<LogicalType> types, String dumpDir) {
        this.types = new ArrayList<>(types);
        this.dumpDir = dumpDir;
    }

    @Override
    public void open(OpenContext openContext) throws NoSuchAlgorithmException {
        getters = ResultCaptureFactory.getters(types);
        sha256 = MessageDigest.getInstance("SHA-256");
        text = new StringBuilder(256);
        changes = add(NexmarkAccumulators.CHANGES, new LongCounter());
        rows = add(NexmarkAccumulators.ROWS, new LongCounter());
        digestHigh = add(NexmarkAccumulators.DIGEST_HIGH, new LongCounter());
        digestLow = add(NexmarkAccumulators.DIGEST_LOW, new LongCounter());
        finishedMillis = new LongMaximum();
        getRuntimeContext()
                .addAccumulator(NexmarkAccumulators.SINK_FINISHED_MILLIS, finishedMillis);
        dump = dumpDir == null ? null : new HashMap<>();
    }

    private LongCounter add(String name, LongCounter counter) {
        getRuntimeContext().addAccumulator(name, counter);
        return counter;
    }

    @Override
    public void invoke(RowData row, Context context) {
        RowKind kind = row.getRowKind();
        long sign = kind == RowKind.INSERT || kind == RowKind.UPDATE_AFTER ? 1 : -1;
        String line = text(row);
        ByteBuffer hash = ByteBuffer.wrap(sha256.digest(line.getBytes(StandardCharsets.UTF_8)));
        changes.add(1L);
        rows.add(sign);
        digestHigh.add(sign * hash.getLong());
        digestLow.add(sign * hash.getLong());
        if (dump != null) {
            dump.merge(line, sign, Long::sum);
        }
    }

    /** The row's fields as text, without its kind: what the result table holds. */
    private String text(RowData row) {
        text.setLength(0);
        for (int i = 0; i < getters.length; i++) {
            if (i > 0) {
                text.append(FIELD_SEPARATOR);
            }
            // Internal values print canonically: StringData as its text, TimestampData as its
            // LocalDateTime, numbers as Java prints them.
            text.append(getters[i].getFieldOrNull(row));
        }
        return text.toString();
    }

    @Override
    public void finish() {
        finishedMillis.add(System.currentTimeMillis());
        if (dump != null) {
            writeDump();
        }
    }

    private void writeDump() {
        List<String> lines = new ArrayList<>();
        dump.forEach(
                (line, count) -> {
                    if (count != 0) {
                        lines.add(count + "\t" + line.replace(FIELD_SEPARATOR, '|'));
                    }
                });
        try {
            Path dir = Files.createDirectories(Path.of(dumpDir));
            Files.write(
                    dir.resolve(
                            "part-" + getRuntimeContext().getTaskInfo().getIndexOfThisSubtask()),
                    lines);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
