package io.taishan.kv.admin;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The shard snapshots that the kept checkpoints and savepoints reference, as {@code
 * io.taishan.snapshot.gc.KeptSnapshotsMain} lists them: that half reads {@code _metadata} with
 * Flink, which this JVM does not have, so it runs as a child JVM on the classpath that {@code
 * bin/taishan-kv-admin} passes in {@value #READER_CLASSPATH_PROPERTY}.
 *
 * <p>The list is parsed strictly (a format version, a trailer with both counts), because whatever
 * it fails to name is dropped: a list cut short or garbled is refused, never read in part.
 */
record KeptSnapshots(List<Kept> checkpoints) {
    static final String READER_CLASSPATH_PROPERTY = "taishan.admin.checkpoint-reader.classpath";

    /** Set by bin/taishan-kv-admin instead when the reader is not built: how to build it. */
    static final String READER_MISSING_PROPERTY = "taishan.admin.checkpoint-reader.missing";

    static final String READER_MAIN = "io.taishan.snapshot.gc.KeptSnapshotsMain";

    private static final String HEADER = "taishan-kept-snapshots";
    private static final int VERSION = 1;

    /** One kept checkpoint or savepoint. */
    record Kept(
            long checkpointId,
            String kind,
            int taishanStates,
            int otherStates,
            String location,
            List<Ref> references) {
        String label() {
            return kind + " " + checkpointId;
        }
    }

    /** Snapshot {@code snapshotId} of shard {@code shard} of table {@code table}. */
    record Ref(String table, int shard, long snapshotId) {}

    static KeptSnapshots none() {
        return new KeptSnapshots(List.of());
    }

    static KeptSnapshots readFile(Path file) {
        try {
            return parse(Files.readAllLines(file, StandardCharsets.UTF_8), file.toString());
        } catch (IOException e) {
            throw new AdminException("cannot read --kept-snapshots " + file + ": " + e);
        }
    }

    /**
     * Reads the paths in a child JVM with Flink; fails, naming each path that does not read, if any
     * does not.
     */
    static KeptSnapshots readCheckpoints(List<String> paths) {
        String classpath = System.getProperty(READER_CLASSPATH_PROPERTY);
        String missing = System.getProperty(READER_MISSING_PROPERTY);
        if ((classpath == null || classpath.isBlank()) && missing != null) {
            throw new AdminException("gc --keep needs the checkpoint reader: " + missing);
        }
        if (classpath == null || classpath.isBlank()) {
            throw new AdminException(
                    "gc --keep reads checkpoints with Flink, which this JVM does not have: run it"
                            + " through bin/taishan-kv-admin (it sets -D"
                            + READER_CLASSPATH_PROPERTY
                            + "), or give the list with --kept-snapshots FILE");
        }
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.add("-XX:TieredStopAtLevel=1");
        command.add("-cp");
        command.add(classpath);
        command.add(READER_MAIN);
        command.addAll(paths);
        Path errors = null;
        try {
            errors = Files.createTempFile("taishan-gc-reader", ".err");
            Process reader =
                    new ProcessBuilder(command)
                            .redirectInput(ProcessBuilder.Redirect.PIPE)
                            .redirectError(errors.toFile())
                            .start();
            reader.getOutputStream().close();
            String out;
            try (InputStream in = reader.getInputStream()) {
                out = new String(in.readAllBytes(), StandardCharsets.UTF_8);
            }
            int exit = reader.waitFor();
            List<String> failures =
                    Files.readAllLines(errors, StandardCharsets.UTF_8).stream()
                            .filter(line -> !line.isBlank())
                            .toList();
            if (exit != 0) {
                throw new AdminException(
                        "cannot read the kept checkpoints, so nothing is dropped:\n  "
                                + (failures.isEmpty()
                                        ? "the reader exited with " + exit
                                        : String.join("\n  ", failures)));
            }
            return parse(out.lines().toList(), "the checkpoint reader's output");
        } catch (IOException e) {
            throw new AdminException("cannot run the checkpoint reader " + command + ": " + e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AdminException("interrupted while reading the kept checkpoints");
        } finally {
            if (errors != null) {
                try {
                    Files.deleteIfExists(errors);
                } catch (IOException e) {
                    // A temp file left behind.
                }
            }
        }
    }

    static KeptSnapshots parse(List<String> lines, String source) {
        if (lines.isEmpty() || !lines.get(0).equals(HEADER + '\t' + VERSION)) {
            throw bad(source, "it does not start with '" + HEADER + "\\t" + VERSION + "'");
        }
        List<Kept> checkpoints = new ArrayList<>();
        List<Ref> current = null;
        int snapshots = 0;
        for (int i = 1; i < lines.size(); i++) {
            String[] f = lines.get(i).split("\t", -1);
            switch (f[0]) {
                case "checkpoint" -> {
                    expectFields(f, 6, source, i);
                    current = new ArrayList<>();
                    checkpoints.add(
                            new Kept(
                                    number(f[1], source, i),
                                    f[2],
                                    (int) number(f[3], source, i),
                                    (int) number(f[4], source, i),
                                    f[5],
                                    current));
                }
                case "snapshot" -> {
                    expectFields(f, 4, source, i);
                    if (current == null) {
                        throw bad(source, "line " + (i + 1) + ": a snapshot before any checkpoint");
                    }
                    current.add(
                            new Ref(f[1], (int) number(f[2], source, i), number(f[3], source, i)));
                    snapshots++;
                }
                case "end" -> {
                    expectFields(f, 3, source, i);
                    if (i != lines.size() - 1
                            || number(f[1], source, i) != checkpoints.size()
                            || number(f[2], source, i) != snapshots) {
                        throw bad(
                                source,
                                "its end line does not match what precedes it (cut short or"
                                        + " edited?)");
                    }
                    return new KeptSnapshots(
                            checkpoints.stream()
                                    .map(
                                            k ->
                                                    new Kept(
                                                            k.checkpointId(),
                                                            k.kind(),
                                                            k.taishanStates(),
                                                            k.otherStates(),
                                                            k.location(),
                                                            List.copyOf(k.references())))
                                    .toList());
                }
                default -> throw bad(source, "line " + (i + 1) + " is not understood");
            }
        }
        throw bad(source, "it has no end line (cut short?)");
    }

    private static void expectFields(String[] f, int n, String source, int line) {
        if (f.length != n) {
            throw bad(source, "line " + (line + 1) + " has " + f.length + " fields, not " + n);
        }
    }

    private static long number(String text, String source, int line) {
        try {
            long value = Long.parseLong(text);
            if (value < 0) {
                throw new NumberFormatException();
            }
            return value;
        } catch (NumberFormatException e) {
            throw bad(source, "line " + (line + 1) + ": '" + text + "' is not a number");
        }
    }

    private static AdminException bad(String source, String why) {
        return new AdminException(
                "the list of kept snapshots (" + source + ") is refused, nothing dropped: " + why);
    }
}
