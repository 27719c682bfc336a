package io.taishan.kv.server.durable;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileAlreadyExistsException;
import javax.annotation.Nullable;
import org.apache.flink.core.fs.UnsupportedFileSystemSchemeException;

/**
 * An upload or download that did not complete, with why and the path it failed on. Nothing of a
 * failed upload is reported, and what it wrote is deleted; nothing of a failed download is left in
 * place.
 */
public final class TransferFailedException extends IOException {
    private static final long serialVersionUID = 1L;

    /** Why, in the terms a caller acts on. */
    public enum Reason {
        /**
         * The checkpoint storage failed: unreachable, refused the credentials or the path, no file
         * system for the scheme, or kept failing through every attempt.
         */
        STORAGE,
        /** A file to download is not there: the checkpoint lost a file. */
        MISSING,
        /**
         * A downloaded file is not what its checkpoint recorded: shorter, longer, another CRC32C,
         * or a metadata pack that does not parse.
         */
        CORRUPT,
        /** The local disk: a file to upload gone or changed, no space, no permission. */
        LOCAL,
        /** The call took longer than {@code durable.transfer-timeout}. */
        TIMED_OUT,
        /** {@link Transfer#cancel()}, an interrupt of the thread waiting for it, or a shutdown. */
        CANCELLED
    }

    private final Reason reason;
    private final String path;
    private final transient boolean retryable;

    TransferFailedException(
            Reason reason,
            String path,
            String message,
            @Nullable Throwable cause,
            boolean retryable) {
        super(message, cause);
        this.reason = reason;
        this.path = path;
        this.retryable = retryable;
    }

    public Reason reason() {
        return reason;
    }

    /** The remote or local path it failed on (a directory when it concerns the whole call). */
    public String path() {
        return path;
    }

    /** Whether another attempt at the same file may succeed (a storage failure that may pass). */
    boolean retryable() {
        return retryable;
    }

    /** The same failure, its message saying how many attempts were made. */
    TransferFailedException afterAttempts(int attempts) {
        if (attempts <= 1) {
            return this;
        }
        return new TransferFailedException(
                reason, path, getMessage() + " (" + attempts + " attempts)", getCause(), false);
    }

    /**
     * The storage failed on {@code path}. Retried, unless the failure cannot pass by itself: no
     * permission, no file system for the scheme.
     */
    static TransferFailedException storage(String path, String what, Throwable cause) {
        boolean lasting =
                cause instanceof AccessDeniedException
                        || cause instanceof UnsupportedFileSystemSchemeException
                        || cause instanceof FileAlreadyExistsException
                        || refusedByTheOperatingSystem(cause);
        return new TransferFailedException(
                Reason.STORAGE, path, what + ": " + cause, cause, !lasting);
    }

    /**
     * Flink's local file system ({@code file://}) opens files through {@code FileOutputStream},
     * which reports a refusal not as an {@link AccessDeniedException} but as a {@link
     * FileNotFoundException} with the operating system's reason at the end of its message.
     */
    private static boolean refusedByTheOperatingSystem(Throwable cause) {
        if (!(cause instanceof FileNotFoundException)) {
            return false;
        }
        String message = String.valueOf(cause.getMessage());
        return message.endsWith("(Permission denied)")
                || message.endsWith("(Operation not permitted)")
                || message.endsWith("(Read-only file system)");
    }

    static TransferFailedException missing(String path, String what, Throwable cause) {
        return new TransferFailedException(Reason.MISSING, path, what + ": " + cause, cause, false);
    }

    static TransferFailedException corrupt(String path, String message) {
        return new TransferFailedException(Reason.CORRUPT, path, message, null, false);
    }

    static TransferFailedException local(String path, String what, Throwable cause) {
        return new TransferFailedException(Reason.LOCAL, path, what + ": " + cause, cause, false);
    }

    static TransferFailedException cancelled(String path, String message) {
        return new TransferFailedException(Reason.CANCELLED, path, message, null, false);
    }

    static TransferFailedException timedOut(String path, String message) {
        return new TransferFailedException(Reason.TIMED_OUT, path, message, null, false);
    }
}
