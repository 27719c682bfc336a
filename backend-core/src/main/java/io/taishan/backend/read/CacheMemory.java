package io.taishan.backend.read;

import io.taishan.cache.CacheType;
import io.taishan.cache.StateCacheHandle;
import io.taishan.cache.StateCacheRegistry;
import java.io.UncheckedIOException;
import javax.annotation.Nullable;
import org.apache.flink.runtime.memory.MemoryManager;
import org.apache.flink.runtime.memory.OpaqueMemoryResource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One subtask's share of the TaskManager-wide read cache, and the memory Flink budgeted for it.
 *
 * <p>By default the share is the slot's managed memory for the {@code STATE_BACKEND} use case,
 * taken as Flink's RocksDB backend takes its block cache: one shared resource per slot ({@link
 * MemoryManager#getSharedMemoryResourceForManagedMemory}), sized from the first subtask's fraction,
 * held while any keyed backend of the slot lives. Flink then counts the cache in its memory model
 * and never hands the same bytes to another consumer, so a container is never killed for it. The
 * slot's bytes are added to the capacity of the shared cache ({@link StateCacheRegistry}), which is
 * therefore the sum over the slots that use it. With {@code taishan.cache.size} the share is that
 * size instead, per subtask, outside Flink's accounting. A local disk tier ({@code
 * taishan.cache.local-dir}) is part of the shared cache: its disk is not managed memory.
 */
public final class CacheMemory implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(CacheMemory.class);

    /**
     * OHC's resident memory was measured at 1.18 times the bytes it counts (allocator overhead and
     * its hash table, which it does not count): contribute less, so the cache stays within the
     * budget.
     */
    static final double OFF_HEAP_ACCOUNTING_FACTOR = 0.85;

    private static final String RESOURCE_TYPE = "taishan-read-cache-";

    private final StateCacheHandle handle;
    @Nullable private final OpaqueMemoryResource<StateCacheHandle> slotResource;

    private CacheMemory(
            StateCacheHandle handle,
            @Nullable OpaqueMemoryResource<StateCacheHandle> slotResource) {
        this.handle = handle;
        this.slotResource = slotResource;
    }

    /**
     * @param memoryManager the slot's, used when the cache takes managed memory
     * @param managedMemoryFraction the subtask's fraction of it
     */
    public static CacheMemory acquire(
            ReadPathConfig config,
            StateCacheRegistry registry,
            @Nullable MemoryManager memoryManager,
            double managedMemoryFraction) {
        CacheType type = config.cacheType();
        if (type == CacheType.NONE) {
            return none(registry);
        }
        if (config.explicitCacheBytes() != null) {
            return new CacheMemory(
                    registry.acquire(
                            type,
                            contribution(type, config.explicitCacheBytes()),
                            config.localTier()),
                    null);
        }
        if (memoryManager == null || managedMemoryFraction <= 0) {
            LOG.warn(
                    "No managed memory for the Taishan read cache (fraction {}) and no"
                            + " taishan.cache.size: reads go without it",
                    managedMemoryFraction);
            return none(registry);
        }
        try {
            OpaqueMemoryResource<StateCacheHandle> resource =
                    memoryManager.getSharedMemoryResourceForManagedMemory(
                            RESOURCE_TYPE + type.name(),
                            bytes ->
                                    registry.acquire(
                                            type, contribution(type, bytes), config.localTier()),
                            managedMemoryFraction);
            return new CacheMemory(resource.getResourceHandle(), resource);
        } catch (UncheckedIOException e) {
            // The local disk tier could not be made: a setting to fix, not a cache to skip.
            throw e;
        } catch (Exception e) {
            if (e.getCause() instanceof UncheckedIOException local) {
                throw local;
            }
            LOG.warn(
                    "Could not take managed memory for the Taishan read cache ({}): reads go"
                            + " without it",
                    e.getMessage());
            return none(registry);
        }
    }

    private static CacheMemory none(StateCacheRegistry registry) {
        return new CacheMemory(registry.acquire(CacheType.NONE, 0), null);
    }

    private static long contribution(CacheType type, long bytes) {
        long contributed =
                type == CacheType.OFF_HEAP ? (long) (bytes * OFF_HEAP_ACCOUNTING_FACTOR) : bytes;
        return Math.max(1, contributed);
    }

    public StateCacheHandle handle() {
        return handle;
    }

    @Override
    public void close() throws Exception {
        if (slotResource != null) {
            // The slot's last keyed backend closes the handle, through the resource.
            slotResource.close();
        } else {
            handle.close();
        }
    }
}
