package io.taishan.backend.async;

import io.taishan.backend.read.BatchedReads;
import io.taishan.backend.read.StateReader;
import java.util.AbstractMap;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
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
 * <p>A batch runs in two steps ({@link BatchedReads}):
 *
 * <ol>
 *   <li>When Flink hands it over: its reads are probed through the read chain, and the keys that
 *       would need the server are fetched with one {@code MultiGet} per kv-server node. With none,
 *       the batch runs at once. While probes find nothing to fetch, batches skip them ({@link
 *       ProbePolicy}).
 *   <li>When the fetch answers: a mail to the task thread runs every request in order on the
 *       synchronous state of its name, the fetched values standing in for the server's answers, and
 *       completes its future.
 * </ol>
 *
 * <p>Batches run one after the other, in the order Flink hands them over: one waiting for its fetch
 * holds back the later ones, so two requests of one record never run out of order, even when Flink
 * split them over two batches. {@link #fullyLoaded} is true while a fetch is out, so Flink fills
 * the next batch rather than forcing out small ones. A failed fetch only costs its saving: the
 * batch runs anyway, each of its reads asking the server for itself, and failing as the synchronous
 * backend's would.
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

    /** Batches handed over while an earlier one waits for its fetch. */
    private final ArrayDeque<Batch> waiting = new ArrayDeque<>();

    private boolean fetching;

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

    private record Batch(List<StateRequest<?, ?, ?, ?>> requests, CompletableFuture<Void> done) {}

    @Override
    public AsyncRequestContainer<StateRequest<?, ?, ?, ?>> createRequestContainer() {
        return new Requests();
    }

    @Override
    public CompletableFuture<Void> executeBatchRequests(
            AsyncRequestContainer<StateRequest<?, ?, ?, ?>> container) {
        Batch batch = new Batch(((Requests) container).requests, new CompletableFuture<>());
        waiting.add(batch);
        startWaiting();
        return batch.done();
    }

    /** Starts the waiting batches in order, until one has to wait for its fetch. */
    private void startWaiting() {
        while (!fetching && !waiting.isEmpty()) {
            Batch batch = waiting.poll();
            if (!probes.probeNext()) {
                long remoteGets = reader.remoteGets();
                run(batch);
                probes.ranDirect(reader.remoteGets() - remoteGets);
                continue;
            }
            List<BatchedReads.PointRead> misses = probe(batch.requests());
            probes.probed(misses.size());
            if (misses.isEmpty()) {
                run(batch);
                continue;
            }
            fetching = true;
            if (mailbox == null) {
                mailbox = backend.mailbox();
            }
            MailboxExecutor taskThread = mailbox;
            CompletableFuture<List<byte[]>> fetch;
            try {
                fetch = reader.fetch(misses);
            } catch (RuntimeException e) {
                fetch = CompletableFuture.failedFuture(e);
            }
            fetch.whenComplete(
                    (values, failure) -> {
                        try {
                            taskThread.execute(
                                    () -> fetched(batch, misses, values, failure),
                                    "Taishan state requests after their fetch");
                        } catch (RejectedExecutionException closing) {
                            // The task is going away; nothing waits for this batch.
                        }
                    });
        }
    }

    private void fetched(
            Batch batch,
            List<BatchedReads.PointRead> misses,
            @Nullable List<byte[]> values,
            @Nullable Throwable failure) {
        fetching = false;
        if (failure != null) {
            LOG.warn(
                    "Reading the {} cache misses of a batch of state requests together failed;"
                            + " each read asks the kv-server itself.",
                    misses.size(),
                    failure);
        } else if (values != null) {
            reader.holdFetched(misses, values);
        }
        try {
            run(batch);
        } finally {
            reader.releaseFetched();
        }
        startWaiting();
    }

    /** The reads of {@code requests} that would ask the server, found by running them dry. */
    private List<BatchedReads.PointRead> probe(List<StateRequest<?, ?, ?, ?>> requests) {
        List<BatchedReads.PointRead> misses;
        reader.startProbe();
        try {
            for (StateRequest<?, ?, ?, ?> request : requests) {
                if (isRead(request)) {
                    try {
                        execute(request);
                    } catch (Exception e) {
                        // The run asks again and reports it.
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

    private void run(Batch batch) {
        for (StateRequest<?, ?, ?, ?> request : batch.requests()) {
            complete(request);
        }
        batch.done().complete(null);
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
                return PagedStateIterator.first(
                        request.getState(),
                        request.getRequestType(),
                        backend.stateRequestHandler(),
                        ((MapState) sync).iterator(),
                        (Map.Entry e) ->
                                new AbstractMap.SimpleImmutableEntry(e.getKey(), e.getValue()));
            case MAP_ITER_KEY:
                return PagedStateIterator.first(
                        request.getState(),
                        request.getRequestType(),
                        backend.stateRequestHandler(),
                        ((MapState) sync).keys().iterator(),
                        Function.identity());
            case MAP_ITER_VALUE:
                return PagedStateIterator.first(
                        request.getState(),
                        request.getRequestType(),
                        backend.stateRequestHandler(),
                        ((MapState) sync).values().iterator(),
                        Function.identity());
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
        return fetching;
    }

    @Override
    public String toString() {
        return "TaishanStateExecutor{fetching=" + fetching + ", waiting=" + waiting.size() + "}";
    }

    @Override
    public void shutdown() {
        waiting.clear();
    }
}
