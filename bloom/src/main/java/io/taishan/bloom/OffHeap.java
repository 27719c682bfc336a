package io.taishan.bloom;

import java.lang.reflect.Field;
import java.nio.ByteBuffer;

/**
 * Frees a direct buffer now instead of at some later GC. A filter per shard, rebuilt and re-fetched
 * over the life of a job, would otherwise leave its old bit arrays to the garbage collector, which
 * does not see their size and may run out of direct memory first.
 */
final class OffHeap {

    private static final sun.misc.Unsafe UNSAFE = loadUnsafe();

    private OffHeap() {}

    /** Frees {@code buffer}, which must come from {@code allocateDirect} (not a slice). */
    static void free(ByteBuffer buffer) {
        if (UNSAFE != null) {
            UNSAFE.invokeCleaner(buffer);
        }
        // Without Unsafe the memory goes back when the buffer becomes unreachable.
    }

    private static sun.misc.Unsafe loadUnsafe() {
        try {
            Field field = sun.misc.Unsafe.class.getDeclaredField("theUnsafe");
            field.setAccessible(true);
            return (sun.misc.Unsafe) field.get(null);
        } catch (ReflectiveOperationException | RuntimeException e) {
            return null;
        }
    }
}
