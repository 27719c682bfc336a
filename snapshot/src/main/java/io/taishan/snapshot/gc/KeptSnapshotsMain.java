package io.taishan.snapshot.gc;

import java.io.IOException;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.GlobalConfiguration;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.plugin.PluginManager;
import org.apache.flink.core.plugin.PluginUtils;

/**
 * {@code KeptSnapshotsMain PATH...}: the half of {@code taishan-kv-admin gc --keep PATH} that needs
 * Flink. The admin runs it as a child JVM on a classpath with Flink (the kv-server's has none) and
 * reads its standard output, a {@link KeptSnapshotsList}.
 *
 * <p>Every path is read before anything is printed; if one cannot be read, each failure is one line
 * on stderr ({@code cannot read PATH: reason}), nothing goes to stdout and the exit code is 1. File
 * systems are Flink's: the configuration of {@code FLINK_CONF_DIR} and the plugins of {@code
 * FLINK_PLUGINS_DIR} when those are set (as {@code bin/taishan-kv-admin} does from {@code
 * FLINK_HOME}), so checkpoints on S3 or HDFS read as the job's JobManager reads them.
 */
public final class KeptSnapshotsMain {
    static final int EXIT_OK = 0;
    static final int EXIT_UNREADABLE = 1;
    static final int EXIT_USAGE = 2;

    private KeptSnapshotsMain() {}

    public static void main(String[] args) {
        if (System.getProperty("log4j.configurationFile") == null
                && System.getProperty("log4j2.configurationFile") == null) {
            System.setProperty(
                    "log4j2.configurationFile", "io/taishan/snapshot/gc/kept-snapshots-log4j2.xml");
        }
        System.exit(run(args, System.out, System.err));
    }

    public static int run(String[] args, PrintStream out, PrintStream err) {
        if (args.length == 0) {
            err.println("usage: KeptSnapshotsMain <checkpoint or savepoint path>...");
            return EXIT_USAGE;
        }
        try {
            initializeFileSystems();
        } catch (RuntimeException e) {
            err.println("cannot set up Flink's file systems: " + oneLine(e));
            return EXIT_UNREADABLE;
        }
        ClassLoader classLoader = KeptSnapshotsMain.class.getClassLoader();
        List<KeptCheckpoint> kept = new ArrayList<>();
        boolean failed = false;
        for (String path : args) {
            try {
                kept.add(KeptCheckpointReader.read(path, classLoader));
            } catch (IOException | RuntimeException e) {
                err.println("cannot read " + path + ": " + oneLine(e));
                failed = true;
            }
        }
        if (failed) {
            return EXIT_UNREADABLE;
        }
        KeptSnapshotsList.write(kept, out);
        return EXIT_OK;
    }

    private static void initializeFileSystems() {
        Configuration config =
                System.getenv("FLINK_CONF_DIR") == null
                        ? new Configuration()
                        : GlobalConfiguration.loadConfiguration();
        // Without FLINK_PLUGINS_DIR Flink would look in ./plugins, wherever the operator stands.
        PluginManager plugins =
                System.getenv("FLINK_PLUGINS_DIR") == null
                        ? null
                        : PluginUtils.createPluginManagerFromRootFolder(config);
        FileSystem.initialize(config, plugins);
    }

    private static String oneLine(Exception e) {
        String message = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
        return message.replaceAll("\\s*\\R\\s*", " ");
    }
}
