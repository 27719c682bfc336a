package io.taishan.benchmarks.state;

import java.nio.file.Path;

/**
 * What a trial asks of its backend: the read cache (only backends with one use it) and a working
 * directory, deleted after the trial, for local files, server data and checkpoints.
 */
public record BackendSettings(ReadCache readCache, Path workDir) {}
