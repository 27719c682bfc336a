package io.taishan.kv.server.durable;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.zip.CRC32C;
import org.apache.flink.core.fs.FSDataInputStream;
import org.apache.flink.core.fs.FSDataOutputStream;

/**
 * The streams to and from checkpoint storage, as the transfers see them: every byte counted and
 * checksummed on its way (CRC32C, so no file is read twice), the call's progress advanced, a
 * stopped call noticed between buffers, and every failure of the storage turned into a {@link
 * TransferFailedException} naming the remote path. So an {@code IOException} of any other type in a
 * transfer came from the local disk.
 */
final class RemoteStreams {
    private RemoteStreams() {}

    /** Bytes to an object being written; {@link #close()} is when object stores commit it. */
    static final class Output extends OutputStream {
        private final FSDataOutputStream out;
        private final String path;
        private final Transfer<?> transfer;
        private final boolean sync;
        private final CRC32C crc = new CRC32C();
        private long count;
        private boolean closed;

        /**
         * @param sync fsync before closing: a local file's bytes are durable only then, where a
         *     distributed file system's close is its commit (Flink's own checkpoint streams only
         *     close, and S3A warns that it cannot sync)
         */
        Output(FSDataOutputStream out, String path, Transfer<?> transfer, boolean sync) {
            this.out = out;
            this.path = path;
            this.transfer = transfer;
            this.sync = sync;
        }

        @Override
        public void write(int b) throws IOException {
            write(new byte[] {(byte) b}, 0, 1);
        }

        @Override
        public void write(byte[] bytes, int offset, int length) throws IOException {
            transfer.checkRunning();
            try {
                out.write(bytes, offset, length);
            } catch (IOException e) {
                throw TransferFailedException.storage(path, "cannot write " + path, e);
            }
            crc.update(bytes, offset, length);
            count += length;
            transfer.moved(length);
        }

        @Override
        public void flush() throws IOException {
            try {
                out.flush();
            } catch (IOException e) {
                throw TransferFailedException.storage(path, "cannot write " + path, e);
            }
        }

        /** Completes the object: synced where that is how, then closed. */
        @Override
        public void close() throws IOException {
            if (closed) {
                return;
            }
            closed = true;
            try {
                if (sync) {
                    out.sync();
                }
                out.close();
            } catch (IOException e) {
                throw TransferFailedException.storage(path, "cannot complete " + path, e);
            }
        }

        /** Closes after a failure, which may leave (or, on an object store, commit) a part. */
        void abandon() {
            if (closed) {
                return;
            }
            closed = true;
            try {
                out.close();
            } catch (IOException | RuntimeException e) {
                // The call fails anyway; what this left is deleted with the call's other objects.
            }
        }

        long count() {
            return count;
        }

        int crc32c() {
            return (int) crc.getValue();
        }
    }

    /**
     * Bytes of an object being read, no more than {@code expected} of them: a longer object fails
     * as soon as it shows, not after it was read whole.
     */
    static final class Input extends InputStream {
        private final FSDataInputStream in;
        private final String path;
        private final long expected;
        private final Transfer<?> transfer;
        private final CRC32C crc = new CRC32C();
        private long count;

        Input(FSDataInputStream in, String path, long expected, Transfer<?> transfer) {
            this.in = in;
            this.path = path;
            this.expected = expected;
            this.transfer = transfer;
        }

        @Override
        public int read() throws IOException {
            byte[] one = new byte[1];
            return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
        }

        @Override
        public int read(byte[] bytes, int offset, int length) throws IOException {
            transfer.checkRunning();
            int n;
            try {
                n = in.read(bytes, offset, length);
            } catch (FileNotFoundException e) {
                throw TransferFailedException.missing(path, path + " is missing", e);
            } catch (IOException e) {
                throw TransferFailedException.storage(path, "cannot read " + path, e);
            }
            if (n > 0) {
                if (count + n > expected) {
                    throw TransferFailedException.corrupt(
                            path,
                            path + " is corrupt: longer than the " + expected + " bytes recorded");
                }
                crc.update(bytes, offset, n);
                count += n;
                transfer.moved(n);
            }
            return n;
        }

        /** Fails unless exactly the recorded bytes were read. */
        void verify(int expectedCrc32c) throws TransferFailedException {
            if (count != expected) {
                throw TransferFailedException.corrupt(
                        path,
                        path
                                + " is corrupt: "
                                + count
                                + " bytes where "
                                + expected
                                + " were recorded");
            }
            int actual = (int) crc.getValue();
            if (actual != expectedCrc32c) {
                throw TransferFailedException.corrupt(
                        path,
                        path
                                + " is corrupt: CRC32C "
                                + RemoteFile.crc32cHex(actual)
                                + " where "
                                + RemoteFile.crc32cHex(expectedCrc32c)
                                + " was recorded");
            }
        }

        @Override
        public void close() {
            try {
                in.close();
            } catch (IOException | RuntimeException e) {
                // Everything needed was read and checked, or the read failed already.
            }
        }
    }
}
