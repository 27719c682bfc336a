package io.taishan.backend.async;

import io.taishan.backend.TaishanKeyedStateBackend;
import java.io.IOException;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.concurrent.RunnableFuture;
import javax.annotation.Nonnull;
import javax.annotation.Nullable;
import org.apache.flink.api.common.operators.MailboxExecutor;
import org.apache.flink.api.common.state.StateTtlConfig;
import org.apache.flink.api.common.state.v2.AggregatingStateDescriptor;
import org.apache.flink.api.common.state.v2.ReducingStateDescriptor;
import org.apache.flink.api.common.state.v2.State;
import org.apache.flink.api.common.state.v2.StateDescriptor;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.runtime.asyncprocessing.AsyncExecutionController;
import org.apache.flink.runtime.asyncprocessing.RecordContext;
import org.apache.flink.runtime.asyncprocessing.StateExecutor;
import org.apache.flink.runtime.asyncprocessing.StateRequestHandler;
import org.apache.flink.runtime.checkpoint.CheckpointOptions;
import org.apache.flink.runtime.checkpoint.SnapshotType;
import org.apache.flink.runtime.state.AsyncKeyedStateBackend;
import org.apache.flink.runtime.state.CheckpointStreamFactory;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyGroupedInternalPriorityQueue;
import org.apache.flink.runtime.state.Keyed;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.PriorityComparable;
import org.apache.flink.runtime.state.SnapshotResult;
import org.apache.flink.runtime.state.heap.HeapPriorityQueueElement;
import org.apache.flink.runtime.state.internal.InternalKvState;
import org.apache.flink.runtime.state.v2.AbstractAggregatingState;
import org.apache.flink.runtime.state.v2.AbstractListState;
import org.apache.flink.runtime.state.v2.AbstractMapState;
import org.apache.flink.runtime.state.v2.AbstractReducingState;
import org.apache.flink.runtime.state.v2.AbstractValueState;
import org.apache.flink.runtime.state.v2.StateDescriptorUtils;
import org.apache.flink.runtime.state.v2.internal.InternalKeyedState;

/**
 * The keyed backend of an operator with asynchronous state (Flink 2's State V2 API): the
 * synchronous {@link TaishanKeyedStateBackend}, built and restored as for any operator, under the
 * asynchronous interface. Its states are Flink's own V2 states ({@code AbstractValueState} and its
 * siblings), which hand every access to Flink's execution controller as a request; the controller
 * passes them in batches to the {@link TaishanStateExecutor}, which reads the misses of a whole
 * batch in one round and runs each request on the synchronous state of the same name.
 *
 * <p>So checkpoints, restores, rescaling, timers, TTL (server-side expiry included) and the
 * checkpoint format are the synchronous backend's: a checkpoint of an operator with asynchronous
 * state restores into the same operator without it, and back. Unlike Flink's adaptor for
 * synchronous backends, a V2 descriptor's TTL is kept.
 */
public final class TaishanAsyncKeyedStateBackend<K> implements AsyncKeyedStateBackend<K> {
    private final TaishanKeyedStateBackend<K> backend;

    /** The synchronous state under each V2 state this backend made. */
    private final Map<State, InternalKvState<K, ?, ?>> syncStates = new IdentityHashMap<>();

    private final Map<String, State> byName = new HashMap<>();
    @Nullable private StateRequestHandler handler;

    public TaishanAsyncKeyedStateBackend(TaishanKeyedStateBackend<K> backend) {
        this.backend = backend;
    }

    /** The synchronous backend underneath. */
    public TaishanKeyedStateBackend<K> syncBackend() {
        return backend;
    }

    @Override
    public void setup(@Nonnull StateRequestHandler stateRequestHandler) {
        this.handler = stateRequestHandler;
    }

    @Override
    @SuppressWarnings("unchecked")
    public <N, S extends State, SV> S getOrCreateKeyedState(
            N defaultNamespace,
            TypeSerializer<N> namespaceSerializer,
            StateDescriptor<SV> stateDesc)
            throws Exception {
        State state = byName.get(stateDesc.getStateId());
        if (state == null) {
            state = createStateInternal(defaultNamespace, namespaceSerializer, stateDesc);
            byName.put(stateDesc.getStateId(), state);
        }
        return (S) state;
    }

    @Override
    @Nonnull
    @SuppressWarnings({"unchecked", "rawtypes"})
    public <N, S extends InternalKeyedState, SV> S createStateInternal(
            @Nonnull N defaultNamespace,
            @Nonnull TypeSerializer<N> namespaceSerializer,
            @Nonnull StateDescriptor<SV> stateDesc)
            throws Exception {
        if (handler == null) {
            throw new IllegalStateException("a state asked for before setup()");
        }
        stateDesc.initializeSerializerUnlessSet(backend.executionConfig());
        org.apache.flink.api.common.state.StateDescriptor syncDesc =
                StateDescriptorUtils.transformFromV2ToV1(stateDesc);
        // Flink's conversion leaves the TTL out; the synchronous state applies it.
        StateTtlConfig ttl = stateDesc.getTtlConfig();
        if (ttl != null && ttl.isEnabled()) {
            syncDesc.enableTimeToLive(ttl);
        }
        InternalKvState<K, N, ?> sync =
                (InternalKvState<K, N, ?>)
                        backend.getPartitionedState(
                                defaultNamespace, namespaceSerializer, syncDesc);
        TypeSerializer<SV> serializer = stateDesc.getSerializer();
        InternalKeyedState state;
        switch (stateDesc.getType()) {
            case VALUE:
                state = new AbstractValueState<>(handler, serializer);
                break;
            case LIST:
                state = new AbstractListState<>(handler, serializer);
                break;
            case MAP:
                state = new AbstractMapState<>(handler, serializer);
                break;
            case REDUCING:
                state =
                        new AbstractReducingState<>(
                                handler,
                                ((ReducingStateDescriptor<SV>) stateDesc).getReduceFunction(),
                                serializer);
                break;
            case AGGREGATING:
                state =
                        new AbstractAggregatingState<>(
                                handler,
                                ((AggregatingStateDescriptor) stateDesc).getAggregateFunction(),
                                serializer);
                break;
            default:
                throw new UnsupportedOperationException(
                        "Unsupported state type: " + stateDesc.getType());
        }
        syncStates.put(state, sync);
        return (S) state;
    }

    /** The synchronous state under {@code state}, one this backend made. */
    InternalKvState<K, ?, ?> syncState(State state) {
        InternalKvState<K, ?, ?> sync = syncStates.get(state);
        if (sync == null) {
            throw new IllegalArgumentException("not a state of this backend: " + state);
        }
        return sync;
    }

    @Override
    @Nonnull
    public StateExecutor createStateExecutor() {
        // Before setup(): the execution controller is built around the executor.
        return new TaishanStateExecutor(this);
    }

    /** Where states hand their requests: Flink's execution controller, once set up. */
    StateRequestHandler stateRequestHandler() {
        if (handler == null) {
            throw new IllegalStateException("a state request before setup()");
        }
        return handler;
    }

    /** The task's mailbox, where fetched batches run: the execution controller's. */
    MailboxExecutor mailbox() {
        if (!(handler instanceof AsyncExecutionController)) {
            throw new IllegalStateException(
                    "the state request handler is not Flink's execution controller: " + handler);
        }
        return ((AsyncExecutionController<?, ?>) handler).getMailboxExecutor();
    }

    @Override
    public void switchContext(@Nullable RecordContext<K> context) {
        if (context != null) {
            backend.setCurrentKeyAndKeyGroup(context.getKey(), context.getKeyGroup());
        }
    }

    @Override
    public KeyGroupRange getKeyGroupRange() {
        return backend.getKeyGroupRange();
    }

    @Override
    public boolean requiresLegacySynchronousTimerSnapshots(SnapshotType checkpointType) {
        return backend.requiresLegacySynchronousTimerSnapshots(checkpointType);
    }

    @Override
    public String getBackendTypeIdentifier() {
        return backend.getBackendTypeIdentifier();
    }

    @Override
    @Nonnull
    public RunnableFuture<SnapshotResult<KeyedStateHandle>> snapshot(
            long checkpointId,
            long timestamp,
            @Nonnull CheckpointStreamFactory streamFactory,
            @Nonnull CheckpointOptions checkpointOptions)
            throws Exception {
        return backend.snapshot(checkpointId, timestamp, streamFactory, checkpointOptions);
    }

    @Override
    public void notifyCheckpointComplete(long checkpointId) throws Exception {
        backend.notifyCheckpointComplete(checkpointId);
    }

    @Override
    public void notifyCheckpointAborted(long checkpointId) throws Exception {
        backend.notifyCheckpointAborted(checkpointId);
    }

    @Override
    public void notifyCheckpointSubsumed(long checkpointId) throws Exception {
        backend.notifyCheckpointSubsumed(checkpointId);
    }

    @Override
    @Nonnull
    public <T extends HeapPriorityQueueElement & PriorityComparable<? super T> & Keyed<?>>
            KeyGroupedInternalPriorityQueue<T> create(
                    @Nonnull String stateName,
                    @Nonnull TypeSerializer<T> byteOrderedElementSerializer) {
        return backend.create(stateName, byteOrderedElementSerializer);
    }

    @Override
    public <T extends HeapPriorityQueueElement & PriorityComparable<? super T> & Keyed<?>>
            KeyGroupedInternalPriorityQueue<T> create(
                    @Nonnull String stateName,
                    @Nonnull TypeSerializer<T> byteOrderedElementSerializer,
                    boolean allowFutureMetadataUpdates) {
        return backend.create(stateName, byteOrderedElementSerializer, allowFutureMetadataUpdates);
    }

    @Override
    public void dispose() {
        backend.dispose();
    }

    @Override
    public void close() throws IOException {
        backend.close();
    }
}
