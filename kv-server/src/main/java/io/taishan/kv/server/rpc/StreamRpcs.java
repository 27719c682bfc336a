package io.taishan.kv.server.rpc;

import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.taishan.kv.proto.ErrorCode;
import io.taishan.kv.proto.FetchFilterRequest;
import io.taishan.kv.proto.FetchFilterResponse;
import io.taishan.kv.proto.FetchFiltersRequest;
import io.taishan.kv.proto.GetRequest;
import io.taishan.kv.proto.ReadValueResponse;
import io.taishan.kv.proto.ShardRef;
import io.taishan.kv.proto.UploadValueRequest;
import io.taishan.kv.proto.UploadValueResponse;
import io.taishan.kv.server.rpc.stream.FilterSendStream;
import io.taishan.kv.server.rpc.stream.LargeValueBudget;
import io.taishan.kv.server.rpc.stream.ValueReadStream;
import io.taishan.kv.server.rpc.stream.ValueUpload;
import io.taishan.kv.server.storage.KvServerException;
import io.taishan.kv.server.storage.Shard;
import io.taishan.kv.server.storage.StorageEngine;
import io.taishan.kv.server.storage.TableStore;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.RejectedExecutionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The streamed RPCs, ReadValue, UploadValue, FetchFilter and FetchFilters: each request is checked
 * here, then its stream ({@link io.taishan.kv.server.rpc.stream}) runs on the threads of its kind,
 * the large-value threads or the node's filter-fetch threads, never on a network thread or the call
 * pool.
 */
final class StreamRpcs {
    // Under the service's name: these lines are the outcome of its calls.
    private static final Logger LOG = LoggerFactory.getLogger(KvGrpcService.class);

    private final StorageEngine storage;
    private final ShardOwnership ownership;
    private final RequestTargets targets;
    private final RequestLimits limits;
    private final LargeValueBudget largeValues;
    private final Responder responder;

    StreamRpcs(
            StorageEngine storage,
            ShardOwnership ownership,
            RequestTargets targets,
            RequestLimits limits,
            LargeValueBudget largeValues,
            Responder responder) {
        this.storage = storage;
        this.ownership = ownership;
        this.targets = targets;
        this.limits = limits;
        this.largeValues = largeValues;
        this.responder = responder;
    }

    void readValue(GetRequest request, ServerCallStreamObserver<ReadValueResponse> call) {
        ValueReadStream stream;
        try {
            responder.checkServing();
            Shard shard =
                    targets.ownedShard(
                            targets.table(request.getTable()), request.getShard().getShard());
            if (!limits.keyFits(request.getKey())) {
                throw limits.keyTooLarge(request.getKey(), "ReadValue of " + shard);
            }
            stream =
                    new ValueReadStream(
                            call,
                            shard,
                            request.getShard().getEpoch(),
                            request.getKey().toByteArray(),
                            largeValues,
                            limits,
                            responder);
        } catch (RuntimeException e) {
            responder.fail(call, "ReadValue", e);
            return;
        }
        try {
            largeValues.executor().execute(stream);
        } catch (RejectedExecutionException e) {
            responder.rejected(call);
        }
    }

    StreamObserver<UploadValueRequest> uploadValue(
            ServerCallStreamObserver<UploadValueResponse> call) {
        return ValueUpload.start(call, largeValues, this::uploadHeader, responder);
    }

    private Shard uploadHeader(UploadValueRequest request) {
        responder.checkServing();
        if (!request.hasHeader()) {
            throw KvServerException.invalid("UploadValue: the stream must start with a header");
        }
        TableStore table = targets.table(request.getTable());
        Shard shard = targets.ownedShard(table, request.getHeader().getShard().getShard());
        long size = request.getHeader().getValueBytes();
        if (size < 0) {
            throw KvServerException.invalid("UploadValue to " + shard + ": negative size " + size);
        }
        if (!limits.largeValueFits(size)) {
            throw limits.largeValueTooLarge(size, "UploadValue to " + shard);
        }
        return shard;
    }

    void fetchFilter(
            FetchFilterRequest request, ServerCallStreamObserver<FetchFilterResponse> call) {
        FilterSendStream stream;
        try {
            responder.checkServing();
            Shard shard =
                    targets.ownedShard(
                            targets.table(request.getTable()), request.getShard().getShard());
            stream =
                    new FilterSendStream(
                            call,
                            s -> shard,
                            List.of(
                                    new FilterSendStream.Target(
                                            shard.id(), request.getShard().getEpoch())),
                            false);
        } catch (KvServerException e) {
            LOG.debug("FetchFilter refused: {}", e.getMessage());
            call.onError(ErrorStatus.of(e));
            return;
        } catch (RuntimeException e) {
            fail("FetchFilter", call, e);
            return;
        }
        sendFilters(stream, call);
    }

    void fetchFilters(
            FetchFiltersRequest request, ServerCallStreamObserver<FetchFilterResponse> call) {
        FilterSendStream stream;
        try {
            responder.checkServing();
            TableStore table = targets.table(request.getTable());
            Set<Integer> distinct = new HashSet<>();
            List<FilterSendStream.Target> shards = new ArrayList<>(request.getShardsCount());
            for (ShardRef ref : request.getShardsList()) {
                if (!distinct.add(ref.getShard())) {
                    throw KvServerException.invalid(
                            "FetchFilters of table '"
                                    + table.name()
                                    + "' names shard "
                                    + ref.getShard()
                                    + " twice");
                }
                shards.add(new FilterSendStream.Target(ref.getShard(), ref.getEpoch()));
            }
            stream = new FilterSendStream(call, s -> targets.ownedShard(table, s), shards, true);
        } catch (KvServerException e) {
            LOG.debug("FetchFilters refused: {}", e.getMessage());
            call.onError(ErrorStatus.of(e));
            return;
        } catch (RuntimeException e) {
            fail("FetchFilters", call, e);
            return;
        }
        sendFilters(stream, call);
    }

    private void fail(
            String what, ServerCallStreamObserver<FetchFilterResponse> call, Exception e) {
        LOG.error("{} failed unexpectedly", what, e);
        call.onError(
                ErrorStatus.of(
                        ErrorCode.STORAGE_ERROR,
                        what + " failed on node " + ownership.selfAddress() + ": " + e));
    }

    private void sendFilters(
            FilterSendStream stream, ServerCallStreamObserver<FetchFilterResponse> call) {
        try {
            storage.filterFetchExecutor().execute(stream);
        } catch (RejectedExecutionException e) {
            responder.rejected(call);
        }
    }
}
