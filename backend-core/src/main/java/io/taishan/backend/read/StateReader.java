package io.taishan.backend.read;

import io.taishan.backend.remote.Uninterruptibly;
import io.taishan.backend.write.PendingRange;
import io.taishan.backend.write.PendingWrites;
import io.taishan.backend.write.PendingWrites.Effect;
import io.taishan.backend.write.WriteBatchQueue;
import io.taishan.cache.StateCache;
import io.taishan.kv.client.CloseableIterator;
import io.taishan.kv.client.KvEntry;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.protocol.ScanRange;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import javax.annotation.Nullable;

/**
 * The read path of one subtask, in one place. A point read asks, in order:
 *
 * <ol>
 *   <li>the {@link ReadCache} (the key's current value, written through by every write): a hit
 *       costs no lock of the write queue and no round trip;
 *   <li>the write queue's {@link PendingWrites} (every unacknowledged write, one hash lookup): a
 *       pending put or delete is the answer; pending appends need the server's value under them;
 *   <li>the shard's Bloom filter ({@link ShardFilters}): "surely absent" is the answer;
 *   <li>the server ({@code Get}).
 * </ol>
 *
 * <p>What the pending writes or the server answered is put into the cache (by the task thread only:
 * a read from another thread could otherwise put back a value the task thread just overwrote).
 *
 * <p>A map whose whole content the cache lists ({@link #cachedMap}, {@link MapListing}) is iterated
 * with no round trip, and so is one that surely never had an entry ({@link #mapSurelyEmpty}); after
 * a scan that read a whole small map the cache is offered its listing.
 *
 * <p>A scan ({@link #scanPage}) reads a page from the server and merges the pending writes of the
 * same range into it, as RocksDB's {@code WriteBatchWithIndex} iterator merges a batch into its
 * base, so map iteration, key iteration and timer refills never wait for the write queue to drain.
 *
 * <p><b>Appends in flight.</b> The server's value under pending appends is exact only if none of
 * them is applied yet; one batch is in flight at a time, so a read that finishes while the
 * acknowledged segment is {@code a} saw no segment after {@code a + 1}. If every pending operand of
 * the key is in a later segment, the server's value plus the operands is exact; otherwise the read
 * is repeated (the in-flight batch has usually landed by then) and, after a few tries, the queue is
 * drained.
 *
 * <p><b>Batches.</b> A batch of reads can ask the server once per node for all its misses ({@link
 * BatchedReads}: a probe pass, a fetch, then the batch's run taking the fetched values at the
 * server's turn).
 */
public final class StateReader {
    private static final int APPEND_READ_ATTEMPTS = 3;

    private final KvStore store;
    private final WriteBatchQueue queue;
    private final ReadCache cache;
    private final ShardFilters filters;
    private final ReadMetrics metrics;
    private final BatchedReads batched;

    public StateReader(
            KvStore store,
            WriteBatchQueue queue,
            ReadCache cache,
            ShardFilters filters,
            ReadMetrics metrics,
            BatchedReads batched) {
        this.batched = batched;
        this.store = store;
        this.queue = queue;
        this.cache = cache;
        this.filters = filters;
        this.metrics = metrics;
    }

    /**
     * The current value of {@code key}, or null. Task thread only.
     *
     * @param mapPrefixLength for map entries, the length of the map's prefix in {@code key}
     */
    @Nullable
    public byte[] get(ShardLease lease, byte[] key, CachePolicy policy, int mapPrefixLength) {
        int shard = lease.shard();
        byte[] cached = cache.get(shard, key, policy, mapPrefixLength);
        if (batched.probing()) {
            if (cached == null) {
                probe(lease, key);
            }
            return null;
        }
        if (cached != null) {
            metrics.cacheHit();
            return cached == StateCache.ABSENT ? null : cached;
        }
        if (policy.cached()) {
            metrics.cacheMiss();
        }
        byte[] value = readThroughPendingAndStore(lease, key, true);
        cache.fill(shard, key, value, policy, mapPrefixLength);
        return value;
    }

    /** As {@link #get}, from any thread (queryable state), without filling the cache. */
    @Nullable
    public byte[] getFromAnyThread(ShardLease lease, byte[] key) {
        return readThroughPendingAndStore(lease, key, false);
    }

    @Nullable
    private byte[] readThroughPendingAndStore(ShardLease lease, byte[] key, boolean taskThread) {
        for (int attempt = 0; ; attempt++) {
            PendingWrites.Lookup pending = queue.lookup(key);
            switch (pending.effect()) {
                case VALUE:
                    return pending.bytes();
                case ABSENT:
                    return null;
                case NONE:
                    return readFromStore(lease, key, taskThread);
                case APPENDS:
                    byte[] base = remoteGet(lease, key);
                    if (pending.oldestSegment() > queue.acknowledgedUpTo() + 1) {
                        return base == null ? pending.bytes() : joined(base, pending.bytes());
                    }
                    if (attempt + 1 >= APPEND_READ_ATTEMPTS) {
                        queue.flushAndWait();
                    }
                    break;
                default:
                    throw new IllegalStateException(pending.effect().name());
            }
        }
    }

    /** In a probe: notes the read if it would have asked the server. */
    private void probe(ShardLease lease, byte[] key) {
        if (queue.lookup(key).effect() == Effect.NONE && filters.mightContain(lease.shard(), key)) {
            batched.note(lease, key);
        }
    }

    /**
     * Starts the probe pass of a batch ({@link BatchedReads}): until {@link #finishProbe}, every
     * {@link #get} answers null and notes the reads that would ask the server. Task thread only.
     */
    public void startProbe() {
        batched.startProbe();
    }

    /** The reads that asked the server so far: {@link ReadMetrics#remoteGets}. */
    public long remoteGets() {
        return metrics.remoteGets();
    }

    /** How many reads the running probe pass has noted so far. */
    public int probedMisses() {
        return batched.noted();
    }

    /** Ends the probe pass: the reads it noted, each of a key with no pending write. */
    public List<BatchedReads.PointRead> finishProbe() {
        return batched.finishProbe();
    }

    /**
     * Reads the noted keys with one {@code MultiGet} per kv-server node, without waiting; the
     * future completes on a client thread. Any thread.
     */
    public CompletableFuture<List<byte[]>> fetch(List<BatchedReads.PointRead> reads) {
        List<ShardLease> leases = new ArrayList<>(reads.size());
        List<byte[]> keys = new ArrayList<>(reads.size());
        for (BatchedReads.PointRead read : reads) {
            leases.add(read.lease());
            keys.add(read.key());
        }
        metrics.batchedFetch(reads.size());
        return store.multiGetAsync(leases, keys);
    }

    /**
     * Holds the fetched {@code values} of {@code reads} for the batch's run, until {@link
     * #releaseFetched}: a {@link #get} takes one where it would ask the server. Task thread only.
     */
    public void holdFetched(List<BatchedReads.PointRead> reads, List<byte[]> values) {
        batched.hold(reads, values);
    }

    /** After the batch's run: drops the fetched values no read took. Task thread only. */
    public void releaseFetched() {
        batched.release();
    }

    @Nullable
    private byte[] readFromStore(ShardLease lease, byte[] key, boolean taskThread) {
        int shard = lease.shard();
        if (taskThread && batched.holds(key)) {
            return batched.take(key);
        }
        if (!filters.mightContain(shard, key)) {
            metrics.filterAbsent();
            return null;
        }
        byte[] value = remoteGet(lease, key);
        if (value == null && filters.enabled() && filters.filter(shard).isLoaded()) {
            filters.falsePositive(shard);
            metrics.filterFalsePositive();
        }
        return value;
    }

    @Nullable
    private byte[] remoteGet(ShardLease lease, byte[] key) {
        metrics.remoteGet();
        return Uninterruptibly.call(() -> store.get(lease, key));
    }

    /**
     * Every entry of the map under {@code prefix} when the cache lists it ({@link MapListing}), or
     * null: then scan it. Task thread only.
     */
    @Nullable
    public List<KvEntry> cachedMap(ShardLease lease, byte[] prefix, CachePolicy policy) {
        List<KvEntry> listed = cache.listing(lease.shard(), prefix, policy);
        if (listed != null) {
            metrics.mapListingHit();
        }
        return listed;
    }

    /**
     * True if the map under {@code prefix} surely has no entry ({@link MapPrefixFilter}). Not
     * offered to the cache as an empty listing: asking again costs as little as a listing would.
     */
    public boolean mapSurelyEmpty(ShardLease lease, byte[] prefix) {
        if (filters.mapMightHaveEntries(lease.shard(), prefix)) {
            return false;
        }
        metrics.mapPrefixAbsentAnswer();
        return true;
    }

    /**
     * After {@link #scanPage} read the whole map under {@code prefix} in one page: lets the cache
     * list it. Task thread only.
     */
    public void mapScanned(
            ShardLease lease, byte[] prefix, List<KvEntry> entries, CachePolicy policy) {
        cache.fillListing(lease.shard(), prefix, entries, policy);
    }

    /**
     * Up to {@code limit} entries of the server's page of {@code [start, end)} with the pending
     * writes of the same range merged in. The merged page may be shorter than {@code limit}
     * (pending deletes), even empty, and still not be the last: continue at {@link
     * MergedPage#next()} until it is null.
     */
    public MergedPage scanPage(
            ShardLease lease, byte[] start, byte[] end, int limit, boolean keysOnly) {
        for (int attempt = 0; ; attempt++) {
            // Pending first: what an acknowledgement removes from it meanwhile is in the page.
            PendingRange pending = queue.pendingRange(start, end, limit);
            List<KvEntry> remote = new ArrayList<>(Math.min(limit, 128));
            metrics.remoteScan();
            try (CloseableIterator<KvEntry> it =
                    Uninterruptibly.iterate(
                            () ->
                                    store.scan(
                                            lease,
                                            ScanRange.between(start, pending.coveredEnd()),
                                            limit,
                                            keysOnly))) {
                // Not hasNext() past the limit: that would fetch the next page.
                while (remote.size() < limit && it.hasNext()) {
                    remote.add(it.next());
                }
            }
            long oldestAppend = pending.oldestAppendSegment();
            if (!keysOnly
                    && oldestAppend != Long.MAX_VALUE
                    && oldestAppend <= queue.acknowledgedUpTo() + 1) {
                if (attempt + 1 >= APPEND_READ_ATTEMPTS) {
                    queue.flushAndWait();
                }
                continue;
            }
            byte[] pageEnd =
                    remote.size() < limit
                            ? pending.coveredEnd()
                            : successor(remote.get(remote.size() - 1).key());
            boolean last = pageEnd.length == 0 || Arrays.equals(pageEnd, end);
            return new MergedPage(merge(remote, pending, pageEnd), last ? null : pageEnd);
        }
    }

    /**
     * The first keys-only page of each of many ranges, each of one leased shard, as {@link
     * #scanPage} answers them, with one remote call per kv-server node for all of them: a subtask
     * that restored thousands of key groups reads the head of each one's timers this way. An entry
     * is null where the node's answer reached its size bound: read that range with {@link
     * #scanPage}.
     */
    public List<MergedPage> firstKeyPages(
            List<ShardLease> leases, List<byte[]> starts, List<byte[]> ends, int limit) {
        List<PendingRange> pendings = new ArrayList<>(leases.size());
        List<KvStore.PageQuery> queries = new ArrayList<>(leases.size());
        for (int i = 0; i < leases.size(); i++) {
            // Pending first, as in scanPage.
            PendingRange pending = queue.pendingRange(starts.get(i), ends.get(i), limit);
            pendings.add(pending);
            queries.add(
                    new KvStore.PageQuery(
                            leases.get(i),
                            ScanRange.between(starts.get(i), pending.coveredEnd()),
                            limit,
                            true));
        }
        metrics.remoteScan();
        List<KvStore.Page> pages = Uninterruptibly.call(() -> store.firstPages(queries));
        List<MergedPage> merged = new ArrayList<>(pages.size());
        for (int i = 0; i < pages.size(); i++) {
            KvStore.Page page = pages.get(i);
            if (page == null) {
                merged.add(null);
                continue;
            }
            PendingRange pending = pendings.get(i);
            List<KvEntry> remote = page.entries();
            byte[] pageEnd;
            if (remote.size() < limit && !page.hasMore()) {
                pageEnd = pending.coveredEnd();
            } else if (remote.isEmpty()) {
                pageEnd = starts.get(i);
            } else {
                pageEnd = successor(remote.get(remote.size() - 1).key());
            }
            boolean last = pageEnd.length == 0 || Arrays.equals(pageEnd, ends.get(i));
            merged.add(new MergedPage(merge(remote, pending, pageEnd), last ? null : pageEnd));
        }
        return merged;
    }

    /**
     * A page merged from the server's and the pending writes'; {@code next} is where the next page
     * starts, null after the last.
     */
    public record MergedPage(List<KvEntry> entries, @Nullable byte[] next) {}

    /** The remote entries and pending items below {@code pageEnd} (empty: unbounded), merged. */
    private static List<KvEntry> merge(List<KvEntry> remote, PendingRange pending, byte[] pageEnd) {
        List<PendingRange.Item> allItems = pending.items();
        int itemCount = allItems.size();
        while (itemCount > 0
                && pageEnd.length > 0
                && Arrays.compareUnsigned(allItems.get(itemCount - 1).key(), pageEnd) >= 0) {
            itemCount--;
        }
        List<PendingRange.Item> items = allItems.subList(0, itemCount);
        if (items.isEmpty() && pending.rangeDeletes().isEmpty()) {
            return remote;
        }
        List<KvEntry> merged = new ArrayList<>(remote.size() + items.size());
        int r = 0;
        int p = 0;
        while (r < remote.size() || p < items.size()) {
            int order;
            if (r == remote.size()) {
                order = 1;
            } else if (p == items.size()) {
                order = -1;
            } else {
                order = Arrays.compareUnsigned(remote.get(r).key(), items.get(p).key());
            }
            if (order < 0) {
                KvEntry entry = remote.get(r++);
                if (!pending.deletedByRange(entry.key())) {
                    merged.add(entry);
                }
            } else {
                PendingRange.Item item = items.get(p++);
                byte[] base = null;
                if (order == 0) {
                    base = remote.get(r++).value();
                }
                if (item.effect() != Effect.ABSENT) {
                    byte[] value = item.applyTo(item.effect() == Effect.APPENDS ? base : null);
                    merged.add(new KvEntry(item.key(), value));
                }
            }
        }
        return merged;
    }

    private static byte[] successor(byte[] key) {
        return Arrays.copyOf(key, key.length + 1);
    }

    private static byte[] joined(byte[] left, byte[] right) {
        byte[] joined = Arrays.copyOf(left, left.length + 1 + right.length);
        joined[left.length] = ',';
        System.arraycopy(right, 0, joined, left.length + 1, right.length);
        return joined;
    }
}
