package io.taishan.kv.server.security;

import io.grpc.MethodDescriptor;
import io.taishan.kv.proto.CreateTableRequest;
import io.taishan.kv.proto.DescribeShardsRequest;
import io.taishan.kv.proto.DescribeTableRequest;
import io.taishan.kv.proto.DropShardSnapshotsRequest;
import io.taishan.kv.proto.DropSnapshotRequest;
import io.taishan.kv.proto.DropSnapshotsBelowRequest;
import io.taishan.kv.proto.DropTableRequest;
import io.taishan.kv.proto.DurableCut;
import io.taishan.kv.proto.DurableFile;
import io.taishan.kv.proto.FetchFilterRequest;
import io.taishan.kv.proto.FetchFiltersRequest;
import io.taishan.kv.proto.GetRequest;
import io.taishan.kv.proto.KvServiceGrpc;
import io.taishan.kv.proto.ListSnapshotsRequest;
import io.taishan.kv.proto.MultiGetRequest;
import io.taishan.kv.proto.MultiScanRequest;
import io.taishan.kv.proto.OpenShardRequest;
import io.taishan.kv.proto.OpenShardsRequest;
import io.taishan.kv.proto.RegisterTtlStatesRequest;
import io.taishan.kv.proto.ReportTtlTimeRequest;
import io.taishan.kv.proto.RestoreRequest;
import io.taishan.kv.proto.RestoreShardsRequest;
import io.taishan.kv.proto.ScanRequest;
import io.taishan.kv.proto.ShardRestore;
import io.taishan.kv.proto.SnapshotRequest;
import io.taishan.kv.proto.UploadSnapshotRequest;
import io.taishan.kv.proto.UploadValueRequest;
import io.taishan.kv.proto.WriteRequest;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import javax.annotation.Nullable;

/**
 * What each RPC needs from its caller's credential, by method. Every method of {@code KvService} is
 * listed; one added to the protocol but not here is refused to every credential but an admin's (and
 * a test fails until it is classified), so a new call never slips past the check.
 *
 * <ul>
 *   <li>{@code Health}: nothing, not even a token, so that liveness probes need no secret. It tells
 *       a node's status, counts, uptime and version, never a table name or data.
 *   <li>{@code ClusterInfo}: any valid token (the node list and limits, which every client needs to
 *       route).
 *   <li>{@code ListTables}: any valid token; the answer holds only the tables it covers.
 *   <li>Every other call names its table(s) in the request; each must be covered by the token's
 *       prefixes. {@code Clone} names two (the source read, the target written), and {@code
 *       RestoreShards} its table and every source table, so restoring a job from another job's
 *       snapshots needs a token that covers both.
 *   <li>The two calls that make a node with durable checkpoints write or read checkpoint storage
 *       also name paths, each of which must lie under one of the token's checkpoint directories
 *       ({@link Credential#mayName}): {@code UploadSnapshot} its {@code shared_dir}, {@code
 *       exclusive_dir} and every one of its {@code reusable_paths} (copies the new checkpoint will
 *       reference, and Flink will one day delete with them), {@code RestoreShards} the path of
 *       every file and metadata pack of its {@code durable_cuts}, whether or not the node turns out
 *       to need them. The node reaches storage with its own credentials, so this is the only thing
 *       between one team's token and another team's directory. An empty field names nothing; the
 *       service refuses a missing directory itself.
 * </ul>
 */
final class CallRules {
    enum Kind {
        OPEN,
        ANY_CREDENTIAL,
        LIST_TABLES,
        TABLES,
        ADMIN_ONLY
    }

    /**
     * The rule of one method; {@link #tablesOf} for {@link Kind#TABLES} only. {@code paths} null:
     * the method names no path in checkpoint storage.
     */
    record Rule(
            Kind kind,
            @Nullable Function<Object, List<String>> tables,
            @Nullable Function<Object, List<String>> paths) {
        List<String> tablesOf(Object request) {
            return tables.apply(request);
        }

        /** The paths in checkpoint storage the request names, without empty fields. */
        List<String> pathsOf(Object request) {
            return paths == null ? List.of() : paths.apply(request);
        }
    }

    static final Rule ADMIN_ONLY = new Rule(Kind.ADMIN_ONLY, null, null);

    private static final Map<String, Rule> RULES = new HashMap<>();

    static {
        plain(KvServiceGrpc.getHealthMethod(), Kind.OPEN);
        plain(KvServiceGrpc.getClusterInfoMethod(), Kind.ANY_CREDENTIAL);
        plain(KvServiceGrpc.getListTablesMethod(), Kind.LIST_TABLES);
        table(KvServiceGrpc.getCreateTableMethod(), CreateTableRequest::getName);
        table(KvServiceGrpc.getDescribeTableMethod(), DescribeTableRequest::getName);
        table(KvServiceGrpc.getDropTableMethod(), DropTableRequest::getName);
        table(KvServiceGrpc.getOpenShardMethod(), OpenShardRequest::getTable);
        table(KvServiceGrpc.getOpenShardsMethod(), OpenShardsRequest::getTable);
        table(KvServiceGrpc.getGetMethod(), GetRequest::getTable);
        table(KvServiceGrpc.getMultiGetMethod(), MultiGetRequest::getTable);
        table(KvServiceGrpc.getScanMethod(), ScanRequest::getTable);
        // The service refuses a MultiScan whose scans name another table than this one.
        table(KvServiceGrpc.getMultiScanMethod(), MultiScanRequest::getTable);
        table(KvServiceGrpc.getWriteMethod(), WriteRequest::getTable);
        table(KvServiceGrpc.getReadValueMethod(), GetRequest::getTable);
        // Every message names the table, so each chunk is checked as the header is.
        table(KvServiceGrpc.getUploadValueMethod(), UploadValueRequest::getTable);
        table(KvServiceGrpc.getSnapshotMethod(), SnapshotRequest::getTable);
        table(KvServiceGrpc.getRestoreMethod(), RestoreRequest::getTable);
        tables(
                KvServiceGrpc.getCloneMethod(),
                r -> List.of(r.getSourceTable(), r.getTargetTable()));
        rule(
                KvServiceGrpc.getRestoreShardsMethod(),
                CallRules::tablesOfRestore,
                CallRules::pathsOfRestore);
        table(KvServiceGrpc.getListSnapshotsMethod(), ListSnapshotsRequest::getTable);
        rule(
                KvServiceGrpc.getUploadSnapshotMethod(),
                r -> List.of(r.getTable()),
                CallRules::pathsOfUpload);
        table(KvServiceGrpc.getDropShardSnapshotsMethod(), DropShardSnapshotsRequest::getTable);
        table(KvServiceGrpc.getDropSnapshotMethod(), DropSnapshotRequest::getTable);
        table(KvServiceGrpc.getDropSnapshotsBelowMethod(), DropSnapshotsBelowRequest::getTable);
        table(KvServiceGrpc.getFetchFilterMethod(), FetchFilterRequest::getTable);
        table(KvServiceGrpc.getFetchFiltersMethod(), FetchFiltersRequest::getTable);
        table(KvServiceGrpc.getDescribeShardsMethod(), DescribeShardsRequest::getTable);
        table(KvServiceGrpc.getRegisterTtlStatesMethod(), RegisterTtlStatesRequest::getTable);
        table(KvServiceGrpc.getReportTtlTimeMethod(), ReportTtlTimeRequest::getTable);
    }

    private CallRules() {}

    /** The table restored into, and every table whose snapshots it takes (read). */
    private static List<String> tablesOfRestore(RestoreShardsRequest request) {
        Set<String> tables = new LinkedHashSet<>();
        tables.add(request.getTable());
        for (ShardRestore r : request.getShardsList()) {
            tables.add(r.getSourceTable().isEmpty() ? request.getTable() : r.getSourceTable());
        }
        return List.copyOf(tables);
    }

    private static List<String> pathsOfUpload(UploadSnapshotRequest request) {
        List<String> paths = new ArrayList<>(2 + request.getReusablePathsCount());
        addNamed(paths, request.getSharedDir());
        addNamed(paths, request.getExclusiveDir());
        for (String reusable : request.getReusablePathsList()) {
            addNamed(paths, reusable);
        }
        return paths;
    }

    private static List<String> pathsOfRestore(RestoreShardsRequest request) {
        List<String> paths = new ArrayList<>();
        for (DurableCut cut : request.getDurableCutsList()) {
            for (DurableFile file : cut.getFilesList()) {
                addNamed(paths, file.getPath());
            }
            addNamed(paths, cut.getMetadataPack().getPath());
        }
        return paths;
    }

    private static void addNamed(List<String> paths, String path) {
        if (!path.isEmpty()) {
            paths.add(path);
        }
    }

    /** The rule of a method by its full name; {@link #ADMIN_ONLY} for one not classified. */
    static Rule of(String fullMethodName) {
        Rule rule = RULES.get(fullMethodName);
        return rule == null ? ADMIN_ONLY : rule;
    }

    /** Whether the method is classified (a test checks every method of the service is). */
    static boolean classifies(String fullMethodName) {
        return RULES.containsKey(fullMethodName);
    }

    private static void plain(MethodDescriptor<?, ?> method, Kind kind) {
        RULES.put(method.getFullMethodName(), new Rule(kind, null, null));
    }

    private static <Q> void table(MethodDescriptor<Q, ?> method, Function<Q, String> table) {
        tables(method, request -> List.of(table.apply(request)));
    }

    private static <Q> void tables(
            MethodDescriptor<Q, ?> method, Function<Q, List<String>> tables) {
        rule(method, tables, null);
    }

    @SuppressWarnings("unchecked")
    private static <Q> void rule(
            MethodDescriptor<Q, ?> method,
            Function<Q, List<String>> tables,
            @Nullable Function<Q, List<String>> paths) {
        RULES.put(
                method.getFullMethodName(),
                new Rule(
                        Kind.TABLES,
                        request -> tables.apply((Q) request),
                        paths == null ? null : request -> paths.apply((Q) request)));
    }
}
