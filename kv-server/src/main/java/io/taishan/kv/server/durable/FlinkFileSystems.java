package io.taishan.kv.server.durable;

import java.io.IOException;
import java.nio.file.Files;
import java.util.List;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.CoreOptions;
import org.apache.flink.configuration.GlobalConfiguration;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.plugin.DefaultPluginManager;
import org.apache.flink.core.plugin.DirectoryBasedPluginFinder;
import org.apache.flink.core.plugin.PluginDescriptor;
import org.apache.flink.core.plugin.PluginManager;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Flink's file systems, set up in this JVM as a Flink process sets them up: the configuration read
 * from a Flink configuration directory with the node's {@code durable.flink.*} keys on top, the
 * plugins of a plugins directory each in a class loader of its own, then {@link
 * FileSystem#initialize(Configuration, PluginManager)}. Every Flink file system then works with
 * Flink's own keys: {@code s3://} through the {@code flink-s3-fs-presto} or {@code
 * flink-s3-fs-hadoop} plugin, {@code hdfs://} through {@code flink-hadoop-fs} and Hadoop on the
 * classpath, {@code file://} always.
 *
 * <p>Flink keeps this state in statics: one configuration per JVM, the last initialization's. A
 * kv-server has one config; tests that start several nodes in one JVM share it. A node that sets
 * none of the keys leaves the JVM's file systems as they are.
 */
final class FlinkFileSystems {
    private static final Logger LOG = LoggerFactory.getLogger(FlinkFileSystems.class);

    private FlinkFileSystems() {}

    /**
     * @throws IllegalArgumentException with one line naming the key, when the configuration
     *     directory or the plugins directory cannot be read
     */
    static void initialize(DurableOptions options) {
        if (options.flinkConfDir() == null
                && options.pluginsDir() == null
                && options.flinkConfig().isEmpty()) {
            // Nothing to set: keep what the JVM has. A node embedded in a Flink process then
            // writes through that process's file systems instead of resetting them to defaults
            // under its feet; a standalone node gets Flink's defaults lazily (file://, and any
            // file system on the classpath) at its first transfer.
            LOG.info(
                    "No durable.flink-conf-dir, plugins-dir or flink.* keys: Flink's file"
                            + " systems as this JVM has them");
            return;
        }
        Configuration config = configuration(options);
        PluginManager plugins = null;
        if (options.pluginsDir() != null) {
            if (!Files.isDirectory(options.pluginsDir())) {
                throw new IllegalArgumentException(
                        "durable.plugins-dir " + options.pluginsDir() + " is not a directory");
            }
            List<PluginDescriptor> found;
            try {
                found =
                        List.copyOf(
                                new DirectoryBasedPluginFinder(options.pluginsDir()).findPlugins());
            } catch (IOException | RuntimeException e) {
                throw new IllegalArgumentException(
                        "durable.plugins-dir " + options.pluginsDir() + " cannot be read: " + e, e);
            }
            plugins =
                    new DefaultPluginManager(
                            found, CoreOptions.getPluginParentFirstLoaderPatterns(config));
            LOG.info(
                    "Flink plugins from {}: {}",
                    options.pluginsDir(),
                    found.stream().map(PluginDescriptor::getPluginId).toList());
        }
        try {
            FileSystem.initialize(config, plugins);
        } catch (RuntimeException e) {
            throw new IllegalArgumentException(
                    "Flink's file systems cannot be set up from the durable.* keys: "
                            + e.getMessage(),
                    e);
        }
    }

    /** The Flink configuration the file systems get: the directory's, then the node's keys. */
    static Configuration configuration(DurableOptions options) {
        Configuration config;
        if (options.flinkConfDir() == null) {
            config = new Configuration();
        } else {
            if (!Files.isDirectory(options.flinkConfDir())) {
                throw new IllegalArgumentException(
                        "durable.flink-conf-dir " + options.flinkConfDir() + " is not a directory");
            }
            try {
                config = GlobalConfiguration.loadConfiguration(options.flinkConfDir().toString());
            } catch (RuntimeException e) {
                throw new IllegalArgumentException(
                        "durable.flink-conf-dir "
                                + options.flinkConfDir()
                                + " cannot be read: "
                                + e.getMessage(),
                        e);
            }
        }
        config.addAll(Configuration.fromMap(options.flinkConfig()));
        return config;
    }
}
