package io.taishan.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtensionConfigurationException;
import org.junit.jupiter.api.io.TempDir;

/**
 * The extension's refusal to start beside Flink's RocksDB, on a class loader that has a class of
 * that name (compiled here: the real frocksdbjni must not join this classpath) and on this test's
 * own, which has none.
 */
class FlinkRocksDbCheckTest {
    @TempDir Path temp;

    @Test
    void aClasspathWithFlinksRocksDbIsRefusedNamingTheExclusion() throws Exception {
        Path source = temp.resolve("src/org/rocksdb/FlinkCompactionFilter.java");
        Files.createDirectories(source.getParent());
        Files.writeString(source, "package org.rocksdb; public class FlinkCompactionFilter {}");
        Path classes = Files.createDirectories(temp.resolve("classes"));
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        assertThat(javac.run(null, null, null, "-d", classes.toString(), source.toString()))
                .isZero();

        try (URLClassLoader withFlinkRocksDb =
                new URLClassLoader(
                        new URL[] {classes.toUri().toURL()}, getClass().getClassLoader())) {
            assertThatThrownBy(() -> TaishanKvServerExtension.checkNoFlinkRocksDb(withFlinkRocksDb))
                    .isInstanceOf(ExtensionConfigurationException.class)
                    .hasMessageContaining("frocksdbjni")
                    .hasMessageContaining(
                            "Exclude org.apache.flink:flink-statebackend-rocksdb from"
                                    + " flink-test-utils");
        }
        assertThatCode(
                        () ->
                                TaishanKvServerExtension.checkNoFlinkRocksDb(
                                        getClass().getClassLoader()))
                .doesNotThrowAnyException();
    }
}
