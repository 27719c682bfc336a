package io.taishan.backend.async;

import io.taishan.backend.read.BatchedReads;
import io.taishan.backend.read.StateReader;
import java.util.AbstractMap;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.Function;
import javax.annotation.Nullable;
import org.apache.flink.api.common.operators.MailboxExecutor;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.State;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.runtime.asyncprocessing.AsyncRequestContainer;
import org.apache.flink.runtime.asyncprocessing.RecordContext;
import org.apache.flink.runtime.asyncprocessing.StateExecutor;
import org.apache.flink.runtime.asyncprocessing.StateRequest;
import org.apache.flink.runtime.state.internal.InternalAggregatingState;
import org.apache.flink.runtime.state.internal.InternalKvState;
import org.apache.flink.runtime.state.internal.InternalReducingState;
import org.apache.flink.runtime.state.v2.adaptor.CompleteStateIterator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Serves Flink's batches of asynchronous state requests for one operator, on the task thread,
 * without ever waiting on the network there.
 *
 * <p>When Flink hands a batch over, its reads are probed through the read chain ({@link
 * BatchedReads}): a read that would need the server is a miss. Then, request by request in Flink's
 * order:
 *
 * <ul>
 *   <li>a request of a key with no miss in the batch and nothing held back runs at once, on the
 *       synchronous state of its name, and completes its future;
 *   <li>every request of a key with a miss, and the key's requests of later batches, is held back
 *       in its batch's <em>group</em>, whose misses are fetched with one {@code MultiGet} per
 *       kv-server node. When the fetch answers, a mail to the task thread runs the group's requests
 *       in order, the fetched values standing in for the server's answers.
 * </ul>
 *
 * <p>So a record whose reads hit the cache never waits for another record's round trip, and a batch
 * arriving while fetches are out is served the same way, its own misses fetched at once beside
 * them. Order is kept where it matters: Flink's execution controller lets one record per key be in
 * flight, so the requests of one key are one record's, in the order it made them; a key's requests
 * stay held back while any group holds one of them, and groups run in the order they were made.
 * Requests of different keys touch different entries and may run in any order.
 *
 * <p>{@link #fullyLoaded} is true while a group waits, so Flink fills the next batch rather than
 * forcing out small ones. While probes find nothing to fetch, batches skip them ({@link
 * ProbePolicy}) and run at once, as Flink's adaptor runs them. A failed fetch only costs its
 * saving: the group runs anyway, each of its reads asking the server for itself, and failing as the
 * synchronous backend's would.
 *
 * <p>Everything but the fetch's network runs on the task thread, so the states' serializers are
 * never shared between threads (FLINK-37463). A map's iteration is answered a page at a time
 * ({@link PagedStateIterator}); each further page is one more request, {@code ITERATOR_LOADING}.
 */
final class TaishanStateExecutor implements StateExecutor {
    private static final Logger LOG = LoggerFactory.getLogger(TaishanStateExecutor.class);

    private final TaishanAsyncKeyedStateBackend<?> backend;
    private final StateReader reader;
    @Nullable private MailboxExecutor mailbox;

    /** Held-back requests, in the order their groups were made: the order they run in. */
    private final ArrayDeque<Group> groups = new ArrayDeque<>();

    /** The keys with held-back requests, and how many each has. */
    private final Map<Object, Integer> heldKeys = new HashMap<>();

    private final ProbePolicy probes = new ProbePolicy();

    TaishanStateExecutor(TaishanAsyncKeyedStateBackend<?> backend) {
        this.backend = backend;
        this.reader = backend.syncBackend().reader();
    }

    /** The requests of one batch, in the order Flink offered them. */
    static final class Requests implements AsyncRequestContainer<StateRequest<?, ?, ?, ?>> {
        final List<StateRequest<?, ?, ?, ?>> requests = new ArrayList<>();

        @Override
        public void offer(StateRequest<?, ?, ?, ?> request) {
            requests.add(request);
        }

        @Override
        public boolean isEmpty() {
            return requests.isEmpty();
        }
    }

    /** The requests one batch held back, the misses fetched for them, and the fetch's answer. */
    private static final class Group {
        final List<StateRequest<?, ?, ?, ?>> requests = new ArrayList<>();
        final CompletableFuture<Void> batchDone;
        List<BatchedReads.PointRead> misses = List.of();
        @Nullable List<byte[]> values;
        @Nullable Throwable failure;
        boolean answered;

        Group(CompletableFuture<Void> batchDone) {
            this.batchDone = batchDone;
        }
    }

    @Override
    public AsyncRequestContainer<StateRequest<?, ?, ?, ?>> createRequestContainer() {
        return new Requests();
    }

    @Override
    public CompletableFuture<Void> executeBatchRequests(
            AsyncRequestContainer<StateRequest<?, ?, ?, ?>> container) {
        List<StateRequest<?, ?, ?, ?>> requests = ((Requests) container).requests;
        Group group = new Group(new CompletableFuture<>());
        if (probes.probeNext()) {
            Set<Object> missedKeys = new HashSet<>();
            group.misses = probe(requests, missedKeys);
            probes.probed(group.misses.size());
            for (StateRequest<?, ?, ?, ?> request : requests) {
                Object key = key(request);
                if (isHeld(key, missedKeys) || isHeld(key, heldKeys.keySet())) {
                    hold(group, request);
                } else {
                    complete(request);
                }
            }
        } else {
            long remoteGets = reader.remoteGets();
            for (StateRequest<?, ?, ?, ?> request : requests) {
                if (isHeld(key(request), heldKeys.keySet())) {
                    hold(group, request);
                } else {
                    complete(request);
                }
            }
            probes.ranDirect(reader.remoteGets() - remoteGets);
        }
        if (group.requests.isEmpty()) {
            group.batchDone.complete(null);
            return group.batchDone;
        }
        groups.add(group);
        if (group.misses.isEmpty()) {
            // Only requests of keys an earlier group holds: they run right after it.
            group.answered = true;
        } else {
            fetch(group);
        }
        return group.batchDone;
    }

    /**
     * Whether {@code keys} holds {@code key}; an empty set answers without hashing the key (a SQL
     * key is a row whose hash reads its bytes), which is every request's case while nothing misses.
     */
    private static boolean isHeld(Object key, Set<Object> keys) {
        return !keys.isEmpty() && keys.contains(key);
    }

    private static Object key(StateRequest<?, ?, ?, ?> request) {
        return request.getRecordContext().getKey();
    }

    private void hold(Group group, StateRequest<?, ?, ?, ?> request) {
        group.requests.add(request);
        heldKeys.merge(key(request), 1, Integer::sum);
    }

    private void release(StateRequest<?, ?, ?, ?> request) {
        heldKeys.computeIfPresent(key(request), (k, n) -> n == 1 ? null : n - 1);
    }

    private void fetch(Group group) {
        if (mailbox == null) {
            mailbox = backend.mailbox();
        }
        MailboxExecutor taskThread = mailbox;
        CompletableFuture<List<byte[]>> fetch;
        try {
            fetch = reader.fetch(group.misses);
        } catch (RuntimeException e) {
            fetch = CompletableFuture.failedFuture(e);
        }
        fetch.whenComplete(
                (values, failure) -> {
                    try {
                        taskThread.execute(
                                () -> answered(group, values, failure),
                                "Taishan state requests after their fetch");
                    } catch (RejectedExecutionException closing) {
                        // The task is going away; nothing waits for these requests.
                    }
                });
    }

    private void answered(Group group, @Nullable List<byte[]> values, @Nullable Throwable failure) {
        group.values = values;
        group.failure = failure;
        group.answered = true;
        // Groups run in the order they were made: an answer waits for the groups before it.
        while (!groups.isEmpty() && groups.peek().answered) {
            run(groups.poll());
        }
    }

    private void run(Group group) {
        if (group.failure != null) {
            LOG.warn(
                    "Reading the {} cache misses of a batch of state requests together failed;"
                            + " each read asks the kv-server itself.",
                    group.misses.size(),
                    group.failure);
        } else if (group.values != null) {
            reader.holdFetched(group.misses, group.values);
        }
        try {
            for (StateRequest<?, ?, ?, ?> request : group.requests) {
                complete(request);
                release(request);
            }
        } finally {
            reader.releaseFetched();
        }
        group.batchDone.complete(null);
    }

    /**
     * The misses of {@code requests}' reads, found by running them dry, and in {@code missedKeys}
     * the keys they are of: every request of such a key is held back, the earlier ones too, so
     * nothing writes a fetched key between the probe and the group's run, where a write drops its
     * fetched value ({@link BatchedReads}). Keys an earlier group holds are not probed: their
     * requests run after that group's writes, which a probe now cannot see.
     */
    private List<BatchedReads.PointRead> probe(
            List<StateRequest<?, ?, ?, ?>> requests, Set<Object> missedKeys) {
        List<BatchedReads.PointRead> misses;
        reader.startProbe();
        try {
            for (StateRequest<?, ?, ?, ?> request : requests) {
                if (isRead(request) && !isHeld(key(request), heldKeys.keySet())) {
                    int before = reader.probedMisses();
                    try {
                        execute(request);
                    } catch (Exception e) {
                        // The run asks again and reports it.
                    }
                    if (reader.probedMisses() > before) {
                        missedKeys.add(key(request));
                    }
                }
            }
        } finally {
            misses = reader.finishProbe();
        }
        return misses;
    }

    private static boolean isRead(StateRequest<?, ?, ?, ?> request) {
        switch (request.getRequestType()) {
            case VALUE_GET:
            case LIST_GET:
            case MAP_GET:
            case MAP_CONTAINS:
            case REDUCING_GET:
            case AGGREGATING_GET:
                return true;
            default:
                return false;
        }
    }

    @Override
    public void executeRequestSync(StateRequest<?, ?, ?, ?> request) {
        complete(request);
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private void complete(StateRequest<?, ?, ?, ?> request) {
        Object result;
        try {
            result = execute(request);
        } catch (Throwable t) {
            request.getFuture()
                    .completeExceptionally(
                            "Taishan failed a " + request.getRequestType() + " request", t);
            return;
        }
        ((StateRequest) request).getFuture().complete(result);
    }

    /** Runs one request on its synchronous state, under its record's key and its namespace. */
    @Nullable
    @SuppressWarnings({"unchecked", "rawtypes"})
    private Object execute(StateRequest<?, ?, ?, ?> request) throws Exception {
        if (request.getState() == null) {
            return null;
        }
        InternalKvState sync = backend.syncState(request.getState());
        RecordContext<?> context = request.getRecordContext();
        backend.switchContext((RecordContext) context);
        sync.setCurrentNamespace(request.getNamespace());
        Object payload = request.getPayload();
        switch (request.getRequestType()) {
            case SYNC_POINT:
                return null;
            case CLEAR:
                ((State) sync).clear();
                return null;
            case VALUE_GET:
                return ((ValueState) sync).value();
            case VALUE_UPDATE:
                ((ValueState) sync).update(payload);
                return null;
            case LIST_GET:
                return new CompleteStateIterator<>(copy((Iterable) ((ListState) sync).get()));
            case LIST_ADD:
                ((ListState) sync).add(payload);
                return null;
            case LIST_UPDATE:
                ((ListState) sync).update((List) payload);
                return null;
            case LIST_ADD_ALL:
                ((ListState) sync).addAll((List) payload);
                return null;
            case MAP_GET:
                return ((MapState) sync).get(payload);
            case MAP_CONTAINS:
                return ((MapState) sync).contains(payload);
            case MAP_PUT:
                Tuple2 entry = (Tuple2) payload;
                ((MapState) sync).put(entry.f0, entry.f1);
                return null;
            case MAP_PUT_ALL:
                ((MapState) sync).putAll((Map) payload);
                return null;
            case MAP_REMOVE:
                ((MapState) sync).remove(payload);
                return null;
            case MAP_IS_EMPTY:
                return ((MapState) sync).isEmpty();
            case MAP_ITER:
                return firstPage(
                        request,
                        ((MapState) sync).iterator(),
                        (Map.Entry e) ->
                                new AbstractMap.SimpleImmutableEntry(e.getKey(), e.getValue()));
            case MAP_ITER_KEY:
                return firstPage(request, ((MapState) sync).keys().iterator(), Function.identity());
            case MAP_ITER_VALUE:
                return firstPage(
                        request, ((MapState) sync).values().iterator(), Function.identity());
            case ITERATOR_LOADING:
                return ((PagedStateIterator) payload).next();
            case REDUCING_GET:
                return ((InternalReducingState) sync).getInternal();
            case REDUCING_ADD:
                ((InternalReducingState) sync).updateInternal(payload);
                return null;
            case AGGREGATING_GET:
                return ((InternalAggregatingState) sync).getInternal();
            case AGGREGATING_ADD:
                ((InternalAggregatingState) sync).updateInternal(payload);
                return null;
            default:
                throw new UnsupportedOperationException(
                        "Taishan does not serve " + request.getRequestType() + " requests");
        }
    }

    /** The first page of a map iteration that {@code request} asks for. */
    private <S, T> PagedStateIterator<S, T> firstPage(
            StateRequest<?, ?, ?, ?> request, Iterator<S> source, Function<S, T> element) {
        return PagedStateIterator.first(
                request.getState(),
                request.getRequestType(),
                backend.stateRequestHandler(),
                source,
                element);
    }

    /**
     * The elements of a synchronous list state, read now: the iterable reads under the current key
     * and namespace, which change before the record's callback iterates.
     */
    private static <T> List<T> copy(@Nullable Iterable<T> iterable) {
        List<T> copy = new ArrayList<>();
        if (iterable != null) {
            for (T element : iterable) {
                copy.add(element);
            }
        }
        return copy;
    }

    @Override
    public boolean fullyLoaded() {
        return !groups.isEmpty();
    }

    @Override
    public String toString() {
        return "TaishanStateExecutor{groups="
                + groups.size()
                + ", heldKeys="
                + heldKeys.size()
                + "}";
    }

    @Override
    public void shutdown() {
        groups.clear();
        heldKeys.clear();
    }
}
