package io.taishan.kv.server.durable;

import java.util.Objects;

/**
 * What a local file of a store is, as far as reuse is concerned: its store, its name and its size.
 * An upload reuses an earlier copy of a file instead of uploading it again when the caller offers a
 * copy under the file's identity ({@link UploadRequest#reusable()}).
 *
 * <p>Why this identifies the bytes: RocksDB names every SST after a file number taken from a
 * counter that its MANIFEST persists before the file becomes part of the database, and never writes
 * a file twice, so within one RocksDB instance a name is given to one content for the instance's
 * whole life; the size is a cheap check on top. A hard link keeps the name, so a cut's files share
 * the identities of the store's live files.
 *
 * <p>What the caller must guarantee: {@code storeId} names one RocksDB lineage on this node and is
 * never given to another, across drops, re-created tables and restarts. A store forked from a cut
 * (a restore) continues the cut's file numbers while its origin goes on creating files under the
 * same numbers with other bytes, so the two must have different ids (the epoch that created a
 * store, which only grows on a node, is one). Inode numbers would not do: the file system gives a
 * deleted file's inode to the next new file.
 *
 * @param storeId the store's id, unique on the node for ever (see above)
 * @param fileName the file's name in the store ({@code 000042.sst})
 * @param sizeBytes its length
 */
public record FileIdentity(String storeId, String fileName, long sizeBytes) {
    public FileIdentity {
        Objects.requireNonNull(storeId, "storeId");
        CutFile.checkFileName(fileName);
        if (sizeBytes < 0) {
            throw new IllegalArgumentException("negative size " + sizeBytes + " of " + fileName);
        }
    }
}
