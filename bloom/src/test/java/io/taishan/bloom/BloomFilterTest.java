package io.taishan.bloom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class BloomFilterTest {

    private static final FilterGeometry SMALL = new FilterGeometry(40, 6);

    private static BloomFilter filled(FilterGeometry geometry, long fromId, int count) {
        BloomFilter filter = BloomFilter.create(geometry);
        for (int i = 0; i < count; i++) {
            filter.put(Keys.hash(fromId + i));
        }
        return filter;
    }

    @Test
    void everyPutHashIsFoundAndAbsentOnesMostlyAreNot() {
        try (BloomFilter filter = BloomFilter.create(100_000, 0.01)) {
            for (long id = 0; id < 100_000; id++) {
                filter.put(Keys.hash(id));
            }
            for (long id = 0; id < 100_000; id++) {
                assertThat(filter.mightContain(Keys.hash(id))).as("id %d", id).isTrue();
            }
            assertThat(Keys.falsePositiveRate(filter, 1L << 40, 100_000)).isLessThan(0.012);
        }
    }

    @Test
    void emptyFilterContainsNothing() {
        try (BloomFilter filter = BloomFilter.create(SMALL)) {
            assertThat(Keys.falsePositiveRate(filter, 0, 10_000)).isZero();
            assertThat(filter.bitsSet()).isZero();
            assertThat(filter.estimatedKeys()).isZero();
            assertThat(filter.estimatedFpp()).isZero();
        }
    }

    @Test
    void geometryAndSize() {
        try (BloomFilter filter = BloomFilter.create(SMALL)) {
            assertThat(filter.geometry()).isEqualTo(SMALL);
            assertThat(filter.numBlocks()).isEqualTo(40);
            assertThat(filter.numHashes()).isEqualTo(6);
            assertThat(filter.bitCount()).isEqualTo(40 * 512);
            assertThat(filter.sizeBytes()).isEqualTo(40 * 64 + 64);
            assertThat(filter.serializedSizeBytes()).isEqualTo(16 + 40 * 64 + 4);
        }
    }

    @Test
    void bitsSetCounterMatchesTheBits() {
        try (BloomFilter filter = filled(SMALL, 0, 1500);
                BloomFilter copy = filter.copy()) {
            // copy() recounts from the bits; put() counted incrementally.
            assertThat(filter.bitsSet()).isEqualTo(copy.bitsSet()).isPositive();
            assertThat(filter.fillRatio()).isEqualTo((double) filter.bitsSet() / filter.bitCount());
            assertThat(filter.estimatedKeys()).isCloseTo(1500, within(100.0));
            long before = filter.bitsSet();
            for (int i = 0; i < 1500; i++) {
                filter.put(Keys.hash(i)); // already there: no new bit
            }
            assertThat(filter.bitsSet()).isEqualTo(before);
        }
    }

    @Test
    void copyIsIndependent() {
        try (BloomFilter filter = filled(SMALL, 0, 500);
                BloomFilter copy = filter.copy()) {
            assertThat(copy.toByteArray()).isEqualTo(filter.toByteArray());
            copy.put(Keys.hash(1_000_000));
            filter.close();
            assertThat(copy.mightContain(Keys.hash(1_000_000))).isTrue();
            for (int i = 0; i < 500; i++) {
                assertThat(copy.mightContain(Keys.hash(i))).isTrue();
            }
        }
    }

    @Test
    void mergeIsTheUnion() {
        try (BloomFilter a = filled(SMALL, 0, 700);
                BloomFilter b = filled(SMALL, 10_000, 700)) {
            a.mergeFrom(b);
            for (int i = 0; i < 700; i++) {
                assertThat(a.mightContain(Keys.hash(i))).isTrue();
                assertThat(a.mightContain(Keys.hash(10_000 + i))).isTrue();
            }
            try (BloomFilter copy = a.copy()) {
                assertThat(a.bitsSet()).isEqualTo(copy.bitsSet());
            }
            long bits = a.bitsSet();
            a.mergeFrom(a);
            a.mergeFrom(b);
            assertThat(a.bitsSet()).isEqualTo(bits);
        }
    }

    @Test
    void mergeOfAnotherGeometryFailsClearly() {
        try (BloomFilter a = BloomFilter.create(SMALL);
                BloomFilter moreBlocks = BloomFilter.create(new FilterGeometry(41, 6));
                BloomFilter moreHashes = BloomFilter.create(new FilterGeometry(40, 7))) {
            assertThatThrownBy(() -> a.mergeFrom(moreBlocks))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage(
                            "cannot merge Bloom filters of different geometry: this 40 blocks ×"
                                    + " 6 hashes, other 41 blocks × 6 hashes");
            assertThatThrownBy(() -> a.mergeFrom(moreHashes))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("other 40 blocks × 7 hashes");
        }
    }

    @Test
    void serializedFormRoundTripsThroughBytesStreamsAndChannels(@TempDir Path dir)
            throws IOException {
        try (BloomFilter filter = filled(new FilterGeometry(3000, 6), 0, 20_000)) {
            byte[] bytes = filter.toByteArray();
            assertThat(bytes).hasSize((int) filter.serializedSizeBytes());

            try (BloomFilter fromBytes = BloomFilter.fromBytes(bytes)) {
                assertSame(filter, fromBytes);
            }

            // A stream carrying something after the filter: exactly the filter is consumed.
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            filter.writeTo(out);
            out.write(new byte[] {1, 2, 3});
            ByteArrayInputStream in = new ByteArrayInputStream(out.toByteArray());
            try (BloomFilter fromStream = BloomFilter.readFrom(in)) {
                assertSame(filter, fromStream);
            }
            assertThat(in.readAllBytes()).containsExactly(1, 2, 3);

            Path file = dir.resolve("filter.bin");
            try (FileChannel channel =
                    FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {
                filter.writeTo(channel);
                assertThat(channel.position()).isEqualTo(filter.serializedSizeBytes());
            }
            try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ);
                    BloomFilter fromChannel = BloomFilter.readFrom(channel)) {
                assertSame(filter, fromChannel);
            }
        }
    }

    @Test
    void fromBytesHonoursTheRange() throws IOException {
        try (BloomFilter filter = filled(SMALL, 0, 100)) {
            byte[] bytes = filter.toByteArray();
            byte[] padded = new byte[bytes.length + 10];
            System.arraycopy(bytes, 0, padded, 7, bytes.length);
            try (BloomFilter loaded = BloomFilter.fromBytes(padded, 7, bytes.length)) {
                assertSame(filter, loaded);
            }
            assertThatThrownBy(() -> BloomFilter.fromBytes(padded, 7, bytes.length + 1))
                    .isInstanceOf(FilterFormatException.class)
                    .hasMessage(
                            "a serialized Bloom filter of 40 blocks × 6 hashes is 2580 bytes, got"
                                    + " 2581");
            assertThatThrownBy(() -> BloomFilter.fromBytes(padded, 7, padded.length))
                    .isInstanceOf(IndexOutOfBoundsException.class);
        }
    }

    @Test
    void corruptOrForeignInputFailsWithAClearError() throws IOException {
        byte[] good;
        try (BloomFilter filter = filled(SMALL, 0, 300)) {
            good = filter.toByteArray();
        }
        assertThatThrownBy(() -> BloomFilter.fromBytes(flip(good, 0)))
                .isInstanceOf(FilterFormatException.class)
                .hasMessageStartingWith("not a Taishan Bloom filter: magic d4534246");
        byte[] future = good.clone();
        future[5] = 2;
        assertThatThrownBy(() -> BloomFilter.fromBytes(future))
                .isInstanceOf(FilterFormatException.class)
                .hasMessage(
                        "unsupported Bloom filter format version 2; this build reads version 1");
        for (int headerByte : new int[] {6, 7, 8, 11, 12, 15}) {
            assertThatThrownBy(
                            () ->
                                    BloomFilter.readFrom(
                                            new ByteArrayInputStream(flip(good, headerByte))))
                    .as("header byte %d", headerByte)
                    .isInstanceOf(FilterFormatException.class)
                    .hasMessageStartingWith("corrupt Bloom filter header: checksum is");
        }
        for (int bitsByte : new int[] {16, 17, 1000, good.length - 5}) {
            assertThatThrownBy(() -> BloomFilter.fromBytes(flip(good, bitsByte)))
                    .as("bits byte %d", bitsByte)
                    .isInstanceOf(FilterFormatException.class)
                    .hasMessageStartingWith("corrupt Bloom filter: checksum of the bits is");
        }
        assertThatThrownBy(() -> BloomFilter.fromBytes(flip(good, good.length - 1)))
                .isInstanceOf(FilterFormatException.class)
                .hasMessageStartingWith("corrupt Bloom filter: checksum of the bits is");
        assertThatThrownBy(() -> BloomFilter.fromBytes(new byte[0]))
                .isInstanceOf(FilterFormatException.class)
                .hasMessage(
                        "truncated Bloom filter: input ended within bytes [0, 16) of the header");
        for (int length : new int[] {10, 16, 17, 2000, good.length - 1}) {
            byte[] truncated = Arrays.copyOf(good, length);
            assertThatThrownBy(() -> BloomFilter.readFrom(new ByteArrayInputStream(truncated)))
                    .as("first %d bytes", length)
                    .isInstanceOf(FilterFormatException.class)
                    .hasMessageStartingWith("truncated Bloom filter: input ended within bytes");
        }
    }

    @Test
    void aFailedReadFreesWhatItAllocated() {
        byte[] good;
        try (BloomFilter filter = filled(new FilterGeometry(16_384, 6), 0, 1000)) {
            good = filter.toByteArray();
        }
        byte[] corrupt = flip(good, good.length - 100);
        long before = directMemoryUsed();
        for (int i = 0; i < 20; i++) {
            assertThatThrownBy(() -> BloomFilter.fromBytes(corrupt))
                    .isInstanceOf(FilterFormatException.class);
        }
        // 20 leaked 1 MiB arrays would show; the GC is not needed to get them back.
        assertThat(directMemoryUsed() - before).isLessThan(1 << 20);
    }

    @Test
    void closeFreesTheMemoryAndUseAfterCloseFailsClearly() throws IOException {
        long before = directMemoryUsed();
        BloomFilter filter = filled(new FilterGeometry(16_384, 6), 0, 100);
        assertThat(directMemoryUsed() - before).isEqualTo(filter.sizeBytes());
        BloomFilter other = BloomFilter.create(filter.geometry());
        filter.close();
        assertThat(directMemoryUsed() - before).isEqualTo(other.sizeBytes());
        assertThat(filter.isClosed()).isTrue();
        filter.close(); // idempotent

        List<Runnable> uses = new ArrayList<>();
        uses.add(() -> filter.put(1));
        uses.add(() -> filter.putConcurrent(1));
        uses.add(() -> filter.mightContain(1));
        uses.add(filter::copy);
        uses.add(filter::toByteArray);
        uses.add(filter::bitsSet);
        uses.add(filter::estimatedFpp);
        uses.add(() -> filter.mergeFrom(other));
        uses.add(() -> other.mergeFrom(filter));
        for (Runnable use : uses) {
            assertThatThrownBy(use::run)
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessage("BloomFilter is closed: 16384 blocks × 6 hashes");
        }
        assertThatThrownBy(() -> filter.writeTo(new ByteArrayOutputStream()))
                .isInstanceOf(IllegalStateException.class);
        assertThat(filter.toString()).contains("closed");
        other.close();
        assertThat(directMemoryUsed() - before).isZero();
    }

    @Test
    void concurrentPutsFromManyThreadsLoseNothing() throws Exception {
        int threads = 4;
        int perThread = 20_000;
        try (BloomFilter filter = BloomFilter.create(new FilterGeometry(200, 6))) {
            // A small, dense filter, so that threads often OR into the same words at once.
            CyclicBarrier start = new CyclicBarrier(threads);
            List<Thread> writers = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                long first = (long) t * perThread;
                Thread writer =
                        new Thread(
                                () -> {
                                    await(start);
                                    for (int i = 0; i < perThread; i++) {
                                        filter.putConcurrent(Keys.hash(first + i));
                                    }
                                });
                writers.add(writer);
                writer.start();
            }
            for (Thread writer : writers) {
                writer.join();
            }
            for (long id = 0; id < (long) threads * perThread; id++) {
                assertThat(filter.mightContain(Keys.hash(id))).as("id %d", id).isTrue();
            }
            try (BloomFilter copy = filter.copy()) {
                assertThat(filter.bitsSet()).isEqualTo(copy.bitsSet());
            }
        }
    }

    private static void assertSame(BloomFilter expected, BloomFilter actual) {
        assertThat(actual.geometry()).isEqualTo(expected.geometry());
        assertThat(actual.bitsSet()).isEqualTo(expected.bitsSet());
        assertThat(actual.toByteArray()).isEqualTo(expected.toByteArray());
    }

    private static byte[] flip(byte[] bytes, int index) {
        byte[] copy = bytes.clone();
        copy[index] ^= (byte) 0x80;
        return copy;
    }

    static long directMemoryUsed() {
        for (BufferPoolMXBean pool : ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class)) {
            if (pool.getName().equals("direct")) {
                return pool.getMemoryUsed();
            }
        }
        throw new AssertionError("no direct buffer pool");
    }

    static void await(CyclicBarrier barrier) {
        try {
            barrier.await();
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }
}
