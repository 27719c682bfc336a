package io.taishan.kv.server.storage;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Optional;
import java.util.UUID;

/**
 * The durable id of a cut: a random UUID given at its first upload to checkpoint storage (or taken
 * from the copy it was downloaded from), kept in {@value #FILE_NAME} beside the cut's files, so
 * that every later upload of the cut reports the same id and a node that holds the cut (or fetched
 * it before) recognizes it when a restore names it. Written to a temporary name, fsynced and
 * renamed: a crash leaves the cut with its id or without one, never with half of it.
 */
final class DurableCutRecord {
    /** Not a RocksDB file name: RocksDB neither reads nor deletes it, and forks do not link it. */
    static final String FILE_NAME = "TAISHAN-DURABLE-CUT";

    private DurableCutRecord() {}

    /** The id recorded in {@code cutDir}, if any. */
    static Optional<String> read(Path cutDir) throws IOException {
        Path file = cutDir.resolve(FILE_NAME);
        String text;
        try {
            text = Files.readString(file, StandardCharsets.US_ASCII).trim();
        } catch (NoSuchFileException e) {
            return Optional.empty();
        }
        return Optional.of(check(text, file.toString()));
    }

    static void write(Path cutDir, String durableId) throws IOException {
        check(durableId, "the durable cut id to record in " + cutDir);
        DurableFiles.writeAtomically(
                cutDir.resolve(FILE_NAME), durableId.getBytes(StandardCharsets.US_ASCII));
    }

    static String newId() {
        return UUID.randomUUID().toString();
    }

    private static String check(String id, String where) throws IOException {
        if (!isValid(id)) {
            throw new IOException(where + " holds no durable cut id: '" + id + "'");
        }
        return id;
    }

    /**
     * Whether {@code id} is a durable cut id as {@link #newId} makes them; anything else, in a
     * record or a request, is refused, so that an id is safe in a log line or a message.
     */
    static boolean isValid(String id) {
        try {
            return UUID.fromString(id).toString().equals(id);
        } catch (IllegalArgumentException e) {
            return false;
        }
    }
}
