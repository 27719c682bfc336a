/**
 * The TaskManager-wide read cache of serialized keyed state: bytes in, bytes out, no Flink.
 *
 * <p>{@link io.taishan.cache.StateCache} is the contract: {@code get}/{@code put}/{@code
 * putAbsent}/{@code invalidate} on {@code (space, key)}, a known-absent sentinel, per-entry
 * wall-clock expiry, and spaces (ids that are never reused) in place of range invalidation. A
 * backend takes a {@link io.taishan.cache.StateCacheHandle} from {@link
 * io.taishan.cache.StateCacheRegistry#shared()}, contributing its memory budget; one instance per
 * {@link io.taishan.cache.CacheType} is shared by every handle and sized by their sum.
 *
 * <p>Implementations: {@link io.taishan.cache.OffHeapStateCache} (OHC, the default), {@link
 * io.taishan.cache.OnHeapStateCache} (Caffeine), {@link io.taishan.cache.NoOpStateCache}. The
 * module README has the cost model with measured figures and what the caller must do for
 * consistency.
 */
package io.taishan.cache;
