package io.taishan.backend.read;

import io.taishan.cache.CacheType;
import io.taishan.cache.LocalDiskCache;
import java.io.Serializable;
import java.util.Locale;
import javax.annotation.Nullable;

/**
 * How a subtask's reads are served: the type of the shared read cache, what this subtask
 * contributes to it (an explicit size, or null for its share of managed memory), its local disk
 * tier (or null for none), and whether the Bloom filters are used.
 */
public record ReadPathConfig(
        CacheType cacheType,
        @Nullable Long explicitCacheBytes,
        @Nullable LocalDiskCache.Spec localTier,
        boolean bloomFilterEnabled)
        implements Serializable {

    public static final ReadPathConfig DEFAULT =
            new ReadPathConfig(CacheType.OFF_HEAP, null, null, true);

    public ReadPathConfig {
        if (localTier != null && cacheType == CacheType.NONE) {
            throw new IllegalArgumentException(
                    "taishan.cache.local-dir is a tier behind the memory cache: it needs"
                            + " taishan.cache.type off-heap or on-heap, not none");
        }
    }

    /** {@code off-heap}, {@code on-heap} or {@code none}, as in {@code taishan.cache.type}. */
    public static CacheType parseCacheType(String value) {
        switch (value.trim().toLowerCase(Locale.ROOT)) {
            case "off-heap":
                return CacheType.OFF_HEAP;
            case "on-heap":
                return CacheType.ON_HEAP;
            case "none":
                return CacheType.NONE;
            default:
                throw new IllegalArgumentException(
                        "taishan.cache.type must be off-heap, on-heap or none, not '"
                                + value
                                + "'");
        }
    }

    /** Whether the cache's memory comes from Flink's managed memory. */
    public boolean usesManagedMemory() {
        return cacheType != CacheType.NONE && explicitCacheBytes == null;
    }
}
