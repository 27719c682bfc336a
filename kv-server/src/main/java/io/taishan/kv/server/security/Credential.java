package io.taishan.kv.server.security;

import java.util.List;

/**
 * What one token may do: every table, call and path ({@code *}, an administrator), or the tables
 * whose names start with one of its prefixes and the paths in checkpoint storage under one of its
 * checkpoint directories. Prefixes match characters, not words: {@code team_a} also covers {@code
 * team_ab_...}, so a prefix should end with a separator ({@code team_a_}). Directories match whole
 * segments ({@link CheckpointPath}).
 *
 * <p>A scoped token without checkpoint directories may name no path: a node with durable
 * checkpoints writes and reads wherever a request says, with its own storage credentials, so on a
 * node shared by several teams a token must be told its team's directory before it can make the
 * node touch any.
 *
 * @param name how logs name the credential (never the token): the file's name field, or {@code line
 *     N}
 * @param checkpointDirs for a scoped token: where in checkpoint storage it may make the node write
 *     and read ({@code UploadSnapshot}, {@code RestoreShards} from durable cuts)
 */
public record Credential(
        String name, boolean admin, List<String> prefixes, List<CheckpointPath> checkpointDirs) {
    public Credential {
        prefixes = List.copyOf(prefixes);
        checkpointDirs = List.copyOf(checkpointDirs);
    }

    /** Without checkpoint directories. */
    public Credential(String name, boolean admin, List<String> prefixes) {
        this(name, admin, prefixes, List.of());
    }

    /** Whether this credential may touch {@code table}. */
    public boolean covers(String table) {
        if (admin) {
            return true;
        }
        for (String prefix : prefixes) {
            if (table.startsWith(prefix)) {
                return true;
            }
        }
        return false;
    }

    /** Whether this credential may make the node write or read {@code path}. */
    public boolean mayName(CheckpointPath path) {
        if (admin) {
            return true;
        }
        for (CheckpointPath dir : checkpointDirs) {
            if (dir.covers(path)) {
                return true;
            }
        }
        return false;
    }

    @Override
    public String toString() {
        if (admin) {
            return "'" + name + "' (admin)";
        }
        return "'"
                + name
                + "' (tables "
                + prefixes
                + (checkpointDirs.isEmpty() ? "" : ", checkpoints " + checkpointDirs)
                + ")";
    }
}
