package io.taishan.benchmarks.state;

import java.nio.file.Path;
import javax.annotation.Nullable;

/**
 * What a trial asks of its backend: the read cache (only backends with one use it) and a working
 * directory, deleted after the trial, for local files, server data and checkpoints.
 *
 * @param serverHome where a backend with a server keeps one server for all the trials of this JVM
 *     that name the same home (its data, its log), so that later trials meet a server warmed by the
 *     earlier ones, as they meet this JVM warmed; each trial removes what it stored when it closes.
 *     Null: a server of the trial's own, in {@code workDir}, stopped when it closes.
 */
public record BackendSettings(ReadCache readCache, Path workDir, @Nullable Path serverHome) {

    /** A trial with a server of its own, if its backend has one. */
    public BackendSettings(ReadCache readCache, Path workDir) {
        this(readCache, workDir, null);
    }
}
