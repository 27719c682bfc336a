package io.taishan.kv.server.durable;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.URI;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.fs.FSDataInputStream;
import org.apache.flink.core.fs.FSDataOutputStream;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.fs.FileSystemFactory;
import org.apache.flink.core.fs.Path;
import org.apache.flink.core.fs.local.LocalFileSystem;

/**
 * Flink's local file system under the scheme {@code faulty://}, with faults a test switches on: the
 * next writes fail after some bytes, or every write waits until released; and reads slowed down by
 * the Flink key {@value #READ_DELAY_KEY} (milliseconds per read call), which a kv-server in a child
 * JVM gets as {@code durable.flink.faulty.read-delay-ms}. Registered as a {@link FileSystemFactory}
 * (test resources, {@code META-INF/services}), so the transfers reach it through {@code
 * FileSystem.initialize} like any Flink file system; the files are real files.
 *
 * <p>The switches are static, as Flink's file systems are: tests using them must not run at once.
 */
public final class FaultyFileSystem extends LocalFileSystem {
    static final String SCHEME = "faulty";

    /** The Flink key of the pause before each read call, in milliseconds (0: none). */
    public static final String READ_DELAY_KEY = "faulty.read-delay-ms";

    private static volatile long readDelayMillis;

    private static final AtomicInteger failingWrites = new AtomicInteger();
    private static volatile long failAfterBytes;
    private static volatile CountDownLatch writesHeld;
    private static final AtomicInteger streamsCreated = new AtomicInteger();
    private static volatile Configuration configured;

    /** Everything off. */
    public static void reset() {
        failingWrites.set(0);
        failAfterBytes = 0;
        writesHeld = null;
        streamsCreated.set(0);
    }

    /** The next {@code count} streams created fail once {@code afterBytes} were written. */
    public static void failWrites(int count, long afterBytes) {
        failAfterBytes = afterBytes;
        failingWrites.set(count);
    }

    /** Every write waits until the latch opens (or its thread is interrupted). */
    public static CountDownLatch holdWrites() {
        CountDownLatch latch = new CountDownLatch(1);
        writesHeld = latch;
        return latch;
    }

    public static int streamsCreated() {
        return streamsCreated.get();
    }

    /** The configuration Flink gave the factory at its last initialization. */
    static Configuration configured() {
        return configured;
    }

    /** {@code faulty://} + a local absolute path. */
    public static String uri(java.nio.file.Path dir) {
        return SCHEME + "://" + dir.toAbsolutePath();
    }

    @Override
    public URI getUri() {
        return URI.create(SCHEME + ":///");
    }

    @Override
    public FSDataInputStream open(Path path) throws IOException {
        return slowed(super.open(path));
    }

    @Override
    public FSDataInputStream open(Path path, int bufferSize) throws IOException {
        return slowed(super.open(path, bufferSize));
    }

    private static FSDataInputStream slowed(FSDataInputStream in) {
        long delay = readDelayMillis;
        return delay <= 0 ? in : new Slow(in, delay);
    }

    /** Pauses before every read call: a storage far slower than the local disk. */
    private static final class Slow extends FSDataInputStream {
        private final FSDataInputStream in;
        private final long delayMillis;

        Slow(FSDataInputStream in, long delayMillis) {
            this.in = in;
            this.delayMillis = delayMillis;
        }

        private void pause() throws IOException {
            try {
                Thread.sleep(delayMillis);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new InterruptedIOException("interrupted while slowed down");
            }
        }

        @Override
        public int read() throws IOException {
            pause();
            return in.read();
        }

        @Override
        public int read(byte[] bytes, int offset, int length) throws IOException {
            pause();
            return in.read(bytes, offset, length);
        }

        @Override
        public void seek(long desired) throws IOException {
            in.seek(desired);
        }

        @Override
        public long getPos() throws IOException {
            return in.getPos();
        }

        @Override
        public void close() throws IOException {
            in.close();
        }
    }

    @Override
    public FSDataOutputStream create(Path path, WriteMode mode) throws IOException {
        streamsCreated.incrementAndGet();
        boolean failing = failingWrites.getAndUpdate(n -> Math.max(0, n - 1)) > 0;
        return new Faulty(super.create(path, mode), failing ? failAfterBytes : -1);
    }

    private static final class Faulty extends FSDataOutputStream {
        private final FSDataOutputStream out;
        private final long failAfter;
        private long written;

        Faulty(FSDataOutputStream out, long failAfter) {
            this.out = out;
            this.failAfter = failAfter;
        }

        @Override
        public void write(int b) throws IOException {
            write(new byte[] {(byte) b}, 0, 1);
        }

        @Override
        public void write(byte[] bytes, int offset, int length) throws IOException {
            CountDownLatch held = writesHeld;
            if (held != null) {
                try {
                    held.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new InterruptedIOException("interrupted while held");
                }
            }
            if (failAfter >= 0 && written + length > failAfter) {
                int part = (int) Math.max(0, failAfter - written);
                out.write(bytes, offset, part);
                written += part;
                throw new IOException("injected failure after " + written + " bytes");
            }
            out.write(bytes, offset, length);
            written += length;
        }

        @Override
        public long getPos() throws IOException {
            return out.getPos();
        }

        @Override
        public void flush() throws IOException {
            out.flush();
        }

        @Override
        public void sync() throws IOException {
            out.sync();
        }

        @Override
        public void close() throws IOException {
            out.close();
        }
    }

    /** Found by Flink through {@code META-INF/services}. */
    public static final class Factory implements FileSystemFactory {
        @Override
        public String getScheme() {
            return SCHEME;
        }

        @Override
        public void configure(Configuration config) {
            configured = config;
            readDelayMillis =
                    config.get(ConfigOptions.key(READ_DELAY_KEY).longType().defaultValue(0L));
        }

        @Override
        public FileSystem create(URI fsUri) {
            return new FaultyFileSystem();
        }
    }
}
