package io.taishan.it.harness;

import java.nio.file.Path;

/** A test parameter: a named way to start a {@link BackendFixture} in a scratch directory. */
public final class BackendUnderTest {

    /** Starts the backend's fixture; the directory is the test's to delete afterwards. */
    @FunctionalInterface
    public interface Starter {
        BackendFixture start(Path workDir) throws Exception;
    }

    private final String name;
    private final Starter starter;

    public BackendUnderTest(String name, Starter starter) {
        this.name = name;
        this.starter = starter;
    }

    public String name() {
        return name;
    }

    public BackendFixture start(Path workDir) throws Exception {
        return starter.start(workDir);
    }

    @Override
    public String toString() {
        return name;
    }
}
