package io.taishan.cache;

import java.time.InstantSource;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import javax.annotation.Nullable;

/**
 * Hands out the TaskManager-wide cache: one shared instance per {@link CacheType}, sized by the sum
 * of what its live handles contributed.
 *
 * <p>Each keyed backend {@link #acquire}s a {@link StateCacheHandle} when it starts, contributing
 * the memory Flink budgeted for it, and closes the handle when it is disposed. The shared
 * instance's capacity is always the sum of its live handles' contributions, so the cache's size is
 * what Flink budgeted, whatever the number of slots, operators and jobs. The first acquire of a
 * type creates its instance; the close of its last handle frees it (an off-heap cache gives its
 * memory back), and a later acquire starts a fresh one, with fresh spaces.
 *
 * <p>Types do not conflict. The type is a per-job setting, and two jobs sharing a TaskManager may
 * choose differently; failing the second job's backend would make a job's deployability depend on
 * which other job the scheduler put next to it. So each type has its own instance, sized by its own
 * handles, and the total is still exactly the sum of all contributions. The same holds for the
 * local disk tier: each (type, {@link LocalDiskCache.Spec}) has an instance of its own. {@link
 * CacheType#NONE} handles share nothing and hold no memory.
 *
 * <p>{@link #shared()} is one registry per class loader that loads this class: TaskManager-wide
 * when the jar sits in Flink's {@code lib/}, per job when it travels in a job jar. Tests and
 * embedded uses construct their own registry.
 *
 * <p>Acquire and close take this registry's lock; they are rare (backend start and dispose). Cache
 * operations never do.
 */
public final class StateCacheRegistry {

    private static final StateCacheRegistry SHARED = new StateCacheRegistry();

    private final InstantSource clock;
    private final int offHeapSegments;
    private final Map<Key, Shared> shared = new HashMap<>();

    /** A registry of its own, on the system clock. */
    public StateCacheRegistry() {
        this(InstantSource.system(), 0);
    }

    /**
     * @param clock what expiry deadlines are compared with
     * @param offHeapSegments OHC segments (a power of two), 0 for OHC's default
     */
    StateCacheRegistry(InstantSource clock, int offHeapSegments) {
        this.clock = Objects.requireNonNull(clock, "clock");
        this.offHeapSegments = offHeapSegments;
    }

    /** The registry of this JVM (of this class loader; see the class Javadoc). */
    public static StateCacheRegistry shared() {
        return SHARED;
    }

    /**
     * A handle on the shared cache of this type, adding {@code contributedBytes} to its capacity.
     *
     * @param contributedBytes the budget this caller brings; positive, except for {@link
     *     CacheType#NONE}, which ignores it
     */
    public StateCacheHandle acquire(CacheType type, long contributedBytes) {
        return acquire(type, contributedBytes, null);
    }

    /**
     * As {@link #acquire(CacheType, long)}, with a local disk tier behind the memory ({@link
     * LocalDiskCache}). Handles with the same type and tier spec share one cache; another spec
     * (directory or size) makes a cache of its own, as another type does.
     *
     * @param localTier the disk tier, or null for none
     * @throws java.io.UncheckedIOException if the tier's directory cannot be made
     */
    public synchronized StateCacheHandle acquire(
            CacheType type, long contributedBytes, @Nullable LocalDiskCache.Spec localTier) {
        Objects.requireNonNull(type, "type");
        if (type == CacheType.NONE) {
            return new StateCacheHandle(this, new NoOpStateCache(), 0L);
        }
        if (contributedBytes <= 0) {
            throw new IllegalArgumentException(
                    "a "
                            + type
                            + " cache needs a positive budget, got "
                            + contributedBytes
                            + " bytes; use NONE without one");
        }
        Key key = new Key(type, localTier);
        Shared s = shared.get(key);
        if (s == null) {
            s = new Shared(key, create(key, contributedBytes), contributedBytes);
            shared.put(key, s);
        } else {
            long total = Math.addExact(s.capacity, contributedBytes);
            s.cache.setCapacity(total);
            s.capacity = total;
        }
        s.handles++;
        return new StateCacheHandle(this, s.cache, contributedBytes);
    }

    private SharedStateCache create(Key key, long capacity) {
        SharedStateCache memory = createMemory(key.type(), capacity);
        if (key.localTier() == null) {
            return memory;
        }
        try {
            return new TieredStateCache(memory, new LocalDiskCache(key.localTier(), clock));
        } catch (RuntimeException e) {
            memory.close();
            throw e;
        }
    }

    private SharedStateCache createMemory(CacheType type, long capacity) {
        switch (type) {
            case OFF_HEAP:
                return new OffHeapStateCache(capacity, offHeapSegments, clock);
            case ON_HEAP:
                return new OnHeapStateCache(capacity, clock);
            default:
                throw new IllegalArgumentException(type.toString());
        }
    }

    /** Called once per handle, by its first close. */
    synchronized void release(StateCacheHandle handle) {
        SharedStateCache cache = handle.cache();
        if (cache.type() == CacheType.NONE) {
            return;
        }
        Shared s = shared.values().stream().filter(x -> x.cache == cache).findAny().orElse(null);
        if (s == null) {
            throw new IllegalStateException("handle of a cache this registry no longer holds");
        }
        s.handles--;
        if (s.handles == 0) {
            shared.remove(s.key);
            cache.close();
        } else {
            s.capacity -= handle.contributedBytes();
            s.cache.setCapacity(s.capacity);
        }
    }

    /** The live handles on this type's shared caches; 0 if there is none. */
    public synchronized int liveHandles(CacheType type) {
        return shared.values().stream()
                .filter(s -> s.key.type() == type)
                .mapToInt(s -> s.handles)
                .sum();
    }

    /** The capacity of this type's shared caches (the sum of their contributions); 0 if none. */
    public synchronized long capacity(CacheType type) {
        return shared.values().stream()
                .filter(s -> s.key.type() == type)
                .mapToLong(s -> s.capacity)
                .sum();
    }

    private record Key(CacheType type, @Nullable LocalDiskCache.Spec localTier) {}

    private static final class Shared {
        final Key key;
        final SharedStateCache cache;
        long capacity;
        int handles;

        Shared(Key key, SharedStateCache cache, long capacity) {
            this.key = key;
            this.cache = cache;
            this.capacity = capacity;
        }
    }
}
