package io.taishan.backend.read;

import io.taishan.backend.write.WriteBatchQueue;
import io.taishan.bloom.LoadingFilter;
import io.taishan.kv.client.FilterBatch;
import io.taishan.kv.client.FilterUnavailableException;
import io.taishan.kv.client.KvException;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.ShardFilter;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.WriteResult;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Loads the server's Bloom filter of each owned shard into its {@link LoadingFilter}, in the
 * background: right after a restore for every shard restored from a snapshot, in one batched fetch
 * (they answer "maybe" until then), and again, one shard at a time, whenever a write
 * acknowledgement reports another version than the one loaded (the server rebuilt its filter: the
 * new copy is more precise; the old one stays correct meanwhile).
 *
 * <p>A re-fetch follows {@link LoadingFilter}'s protocol: {@code beginLoad()} first, then wait
 * until the server has acknowledged every write made before it, then fetch. A filter the server
 * cannot vouch for yet ({@link FilterUnavailableException}, e.g. while it rebuilds after a crash)
 * is tried again later, and again whenever a write result reports a version for the shard (the
 * server has one then); reads go to the server meanwhile.
 */
public final class FilterLoader {
    private static final Logger LOG = LoggerFactory.getLogger(FilterLoader.class);

    static final long RETRY_MILLIS = 1_000;
    static final int MAX_ATTEMPTS = 30;

    /** A loaded copy estimated worse than this is worth a fresher one, when reads show it. */
    static final double REFRESH_ABOVE_FPP = 0.01;

    /** At most one refresh per shard this often: the server may not have rebuilt yet. */
    static final long MIN_REFRESH_NANOS = 2_000_000_000L;

    private final KvStore.Filters store;
    private final ShardFilters filters;
    private final WriteBatchQueue queue;
    private final ScheduledExecutorService executor;
    private final Map<Integer, ShardLease> leases;
    private final Map<Integer, Boolean> inFlight = new ConcurrentHashMap<>();
    private final Map<Integer, Long> lastRefreshNanos = new ConcurrentHashMap<>();
    private final AtomicLong fetches = new AtomicLong();
    private final AtomicLong fetchFailures = new AtomicLong();
    private volatile boolean closed;

    public FilterLoader(
            KvStore.Filters store,
            ShardFilters filters,
            WriteBatchQueue queue,
            ScheduledExecutorService executor,
            Map<Integer, ShardLease> leasesByShard) {
        this.store = store;
        this.filters = filters;
        this.queue = queue;
        this.executor = executor;
        this.leases = Map.copyOf(leasesByShard);
    }

    /**
     * Loads every shard whose filter is not loaded (restored shards), in the background, in one
     * batched fetch ({@link KvStore.Filters#fetchFilters}: a call per node and some hundreds of
     * shards): a restore of 32,768 shards made as many calls one by one, which took seconds and
     * delayed the subtask's own first reads. A shard whose filter the server cannot vouch for yet
     * is tried again on its own, as a re-fetch is.
     */
    public void loadUnloaded() {
        List<Integer> shards = new ArrayList<>();
        for (int shard : leases.keySet()) {
            if (!filters.filter(shard).isLoaded()
                    && inFlight.putIfAbsent(shard, Boolean.TRUE) == null) {
                shards.add(shard);
            }
        }
        if (shards.isEmpty()) {
            return;
        }
        try {
            executor.execute(() -> loadAll(shards));
        } catch (RejectedExecutionException e) {
            shards.forEach(inFlight::remove);
        }
    }

    private void loadAll(List<Integer> shards) {
        if (closed) {
            shards.forEach(inFlight::remove);
            return;
        }
        Map<Integer, LoadingFilter.PendingLoad> loads = new HashMap<>();
        List<ShardLease> toFetch = new ArrayList<>(shards.size());
        FilterBatch batch;
        try {
            for (int shard : shards) {
                loads.put(shard, filters.filter(shard).beginLoad());
                toFetch.add(leases.get(shard));
            }
            fetches.addAndGet(shards.size());
            batch = store.fetchFilters(toFetch);
        } catch (RuntimeException e) {
            // A closed backend ends here; reads go to the server without the filters.
            fetchFailures.addAndGet(shards.size());
            shards.forEach(inFlight::remove);
            if (!closed) {
                LOG.debug("Could not load the Bloom filters of {} shards", shards.size(), e);
            }
            return;
        }
        for (Map.Entry<Integer, ShardFilter> fetched : batch.filters().entrySet()) {
            int shard = fetched.getKey();
            loads.get(shard).complete(fetched.getValue().filter(), fetched.getValue().version());
            inFlight.remove(shard);
        }
        for (Map.Entry<Integer, KvException> failed : batch.failures().entrySet()) {
            int shard = failed.getKey();
            fetchFailures.incrementAndGet();
            if (failed.getValue() instanceof FilterUnavailableException) {
                schedule(shard, false, RETRY_MILLIS, 1);
            } else {
                inFlight.remove(shard);
                if (!closed) {
                    LOG.debug(
                            "Could not load the Bloom filter of shard {}",
                            shard,
                            failed.getValue());
                }
            }
        }
    }

    /** The write path's acknowledgement: re-fetch where the server's version moved on. */
    public void acknowledged(WriteResult result) {
        for (Map.Entry<Integer, Long> v : result.filterVersions().entrySet()) {
            int shard = v.getKey();
            if (!leases.containsKey(shard)) {
                continue;
            }
            LoadingFilter filter = filters.filter(shard);
            // A version for an unloaded shard: the server has a filter now (an earlier fetch
            // found none, e.g. while it rebuilt after a crash).
            if (!filter.isLoaded() || filter.version() != v.getValue()) {
                schedule(shard, true, 0, 0);
            }
        }
    }

    /**
     * A read the shard's filter answered "maybe" found nothing on the server. Write results report
     * a server rebuild only while the subtask writes; a subtask that only reads learns of it here:
     * once its copy has filled past the target, it fetches again (at most every two seconds).
     */
    public void falsePositive(int shard) {
        LoadingFilter filter = filters.filter(shard);
        if (!leases.containsKey(shard) || filter.estimatedFpp() <= REFRESH_ABOVE_FPP) {
            return;
        }
        long now = System.nanoTime();
        Long last = lastRefreshNanos.get(shard);
        if (last != null && now - last < MIN_REFRESH_NANOS) {
            return;
        }
        lastRefreshNanos.put(shard, now);
        schedule(shard, true, 0, 0);
    }

    private void schedule(int shard, boolean refetch, long delayMillis, int attempt) {
        if (closed || (attempt == 0 && inFlight.putIfAbsent(shard, Boolean.TRUE) != null)) {
            return;
        }
        try {
            executor.schedule(
                    () -> load(shard, refetch, attempt), delayMillis, TimeUnit.MILLISECONDS);
        } catch (RejectedExecutionException e) {
            inFlight.remove(shard);
        }
    }

    private void load(int shard, boolean refetch, int attempt) {
        if (closed) {
            inFlight.remove(shard);
            return;
        }
        LoadingFilter filter = filters.filter(shard);
        try {
            LoadingFilter.PendingLoad load = filter.beginLoad();
            if (refetch) {
                // The server's copy holds exactly what it acknowledged before the fetch.
                queue.awaitAcknowledged(queue.lastWrittenSegmentId());
            }
            fetches.incrementAndGet();
            ShardFilter fetched = store.fetchFilter(leases.get(shard));
            load.complete(fetched.filter(), fetched.version());
            inFlight.remove(shard);
        } catch (FilterUnavailableException e) {
            fetchFailures.incrementAndGet();
            if (attempt + 1 < MAX_ATTEMPTS) {
                schedule(shard, refetch, RETRY_MILLIS, attempt + 1);
            } else {
                inFlight.remove(shard);
                LOG.info("The kv-server has no filter for shard {} yet: {}", shard, e.getMessage());
            }
        } catch (RuntimeException e) {
            // Reads go to the server without it; a closed backend or a fenced lease ends here.
            fetchFailures.incrementAndGet();
            inFlight.remove(shard);
            if (!closed) {
                LOG.debug("Could not load the Bloom filter of shard {}", shard, e);
            }
        }
    }

    public long fetches() {
        return fetches.get();
    }

    public long fetchFailures() {
        return fetchFailures.get();
    }

    /** Whether no load is scheduled or running. */
    public boolean idle() {
        return inFlight.isEmpty();
    }

    public void close() {
        closed = true;
    }
}
