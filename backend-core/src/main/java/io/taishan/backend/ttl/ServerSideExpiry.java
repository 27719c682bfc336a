package io.taishan.backend.ttl;

import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.TtlState;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import javax.annotation.Nullable;
import org.apache.flink.api.common.state.StateDescriptor;
import org.apache.flink.api.common.state.StateTtlConfig;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.base.ListSerializer;
import org.apache.flink.runtime.state.ttl.TtlTimeProvider;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Lets the kv-server delete this subtask's expired TTL'd state without anyone reading it, as
 * RocksDB's compaction filter does for Flink's RocksDB backend ({@code
 * RocksDbTtlCompactFiltersManager} is the model): each state registered with a TTL is described to
 * the server (its id, TTL, and where its values keep the timestamp), and the subtask's TTL clock
 * ({@link TtlTimeProvider}, the same one Flink's TTL wrapper reads) is reported for every owned
 * shard, right away and then every {@code reportInterval}. The server expires by that clock only,
 * so it never deletes a value the wrapper would still return.
 */
public final class ServerSideExpiry implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ServerSideExpiry.class);

    @Nullable private final KvStore.Ttl store;
    private final String table;
    private final List<ShardLease> leases;
    private final TtlTimeProvider clock;
    private final Set<Integer> registered = ConcurrentHashMap.newKeySet();
    @Nullable private ScheduledFuture<?> reports;

    /**
     * @param store null when the client cannot do it: nothing is sent
     */
    public ServerSideExpiry(
            @Nullable KvStore.Ttl store,
            String table,
            List<ShardLease> leases,
            TtlTimeProvider clock) {
        this.store = store;
        this.table = table;
        this.leases = List.copyOf(leases);
        this.clock = clock;
    }

    /** Reports the clock now and every {@code interval} on {@code scheduler} (short tasks). */
    public void start(ScheduledExecutorService scheduler, Duration interval) {
        if (store == null) {
            return;
        }
        long millis = Math.max(1, interval.toMillis());
        reports = scheduler.scheduleWithFixedDelay(this::report, 0, millis, TimeUnit.MILLISECONDS);
    }

    /** A state was registered: tells the server if it has a TTL (once per state and backend). */
    public void registered(int stateId, StateDescriptor<?, ?> descriptor) {
        StateTtlConfig ttl = descriptor.getTtlConfig();
        if (store == null || !ttl.isEnabled() || !registered.add(stateId)) {
            return;
        }
        TtlState state = describe(stateId, descriptor, ttl);
        store.registerTtlStates(table, List.of(state));
    }

    /** What the server needs to know of a TTL'd state of Flink's TTL wrapper. */
    static TtlState describe(int stateId, StateDescriptor<?, ?> descriptor, StateTtlConfig ttl) {
        long ttlMillis = Math.max(1, ttl.getTimeToLive().toMillis());
        switch (descriptor.getType()) {
            case MAP:
                return new TtlState(stateId, ttlMillis, TtlState.Layout.MAP_ENTRY, 0);
            case LIST:
                TypeSerializer<?> serializer = descriptor.getSerializer();
                int length =
                        serializer instanceof ListSerializer<?> list
                                ? list.getElementSerializer().getLength()
                                : -1;
                return new TtlState(stateId, ttlMillis, TtlState.Layout.LIST, Math.max(0, length));
            default:
                return new TtlState(stateId, ttlMillis, TtlState.Layout.VALUE, 0);
        }
    }

    private void report() {
        if (registered.isEmpty()) {
            return;
        }
        long now = clock.currentTimestamp();
        store.reportTtlTime(leases, now)
                .whenComplete(
                        (ok, error) -> {
                            if (error != null) {
                                // A fenced zombie or an unreachable server: the next report, or
                                // the job's own failover, settles it.
                                LOG.debug("Could not report the TTL clock of {}", table, error);
                            }
                        });
    }

    @Override
    public void close() {
        if (reports != null) {
            reports.cancel(false);
        }
    }
}
