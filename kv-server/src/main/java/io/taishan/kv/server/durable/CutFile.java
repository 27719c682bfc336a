package io.taishan.kv.server.durable;

import java.util.Objects;

/**
 * One file of a cut and its copy in Flink's checkpoint storage: what an upload reports per data
 * file and what a download is asked for.
 *
 * @param fileName its name in the cut's directory ({@code 000042.sst}); a plain name, no directory
 * @param remote its copy
 */
public record CutFile(String fileName, RemoteFile remote) {
    public CutFile {
        checkFileName(fileName);
        Objects.requireNonNull(remote, "remote");
    }

    /**
     * A name that stays inside its directory: not empty, no separator, not {@code .} or {@code ..}.
     * Names also come from packs read back from remote storage, which must not write elsewhere.
     */
    static String checkFileName(String name) {
        Objects.requireNonNull(name, "file name");
        if (name.isEmpty()
                || name.equals(".")
                || name.equals("..")
                || name.indexOf('/') >= 0
                || name.indexOf('\\') >= 0
                || name.indexOf('\0') >= 0) {
            throw new IllegalArgumentException("not a plain file name: '" + name + "'");
        }
        return name;
    }
}
