package io.taishan.kv.server.security;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.MethodDescriptor;
import io.taishan.kv.proto.CloneRequest;
import io.taishan.kv.proto.DurableCut;
import io.taishan.kv.proto.DurableFile;
import io.taishan.kv.proto.KvServiceGrpc;
import io.taishan.kv.proto.RestoreShardsRequest;
import io.taishan.kv.proto.ShardRestore;
import io.taishan.kv.proto.UploadSnapshotRequest;
import org.junit.jupiter.api.Test;

class CallRulesTest {
    @Test
    void everyMethodOfTheServiceIsClassified() {
        // A method added to the protocol must be given a rule here, or scoped tokens cannot call
        // it at all (see CallRules): this fails first.
        for (MethodDescriptor<?, ?> method : KvServiceGrpc.getServiceDescriptor().getMethods()) {
            assertThat(CallRules.classifies(method.getFullMethodName()))
                    .as(method.getFullMethodName())
                    .isTrue();
        }
    }

    @Test
    void onlyHealthIsOpenAndAnUnknownMethodIsForAdminsOnly() {
        for (MethodDescriptor<?, ?> method : KvServiceGrpc.getServiceDescriptor().getMethods()) {
            boolean open = CallRules.of(method.getFullMethodName()).kind() == CallRules.Kind.OPEN;
            assertThat(open)
                    .as(method.getFullMethodName())
                    .isEqualTo(method == KvServiceGrpc.getHealthMethod());
        }
        assertThat(CallRules.of("taishan.kv.v1.KvService/SomethingNew"))
                .isSameAs(CallRules.ADMIN_ONLY);
    }

    @Test
    void cloneNamesBothTables() {
        CloneRequest clone =
                CloneRequest.newBuilder().setSourceTable("s").setTargetTable("t").build();
        assertThat(CallRules.of(KvServiceGrpc.getCloneMethod().getFullMethodName()).tablesOf(clone))
                .containsExactly("s", "t");
    }

    @Test
    void uploadSnapshotNamesItsDirectoriesAndTheCopiesItMayReference() {
        UploadSnapshotRequest upload =
                UploadSnapshotRequest.newBuilder()
                        .setTable("t")
                        .setSharedDir("s3://b/a/shared")
                        .setExclusiveDir("s3://b/a/chk-2")
                        .addReusablePaths("s3://b/a/shared/f1")
                        .addReusablePaths("s3://b/a/shared/f2")
                        .build();
        CallRules.Rule rule =
                CallRules.of(KvServiceGrpc.getUploadSnapshotMethod().getFullMethodName());
        assertThat(rule.pathsOf(upload))
                .containsExactly(
                        "s3://b/a/shared",
                        "s3://b/a/chk-2",
                        "s3://b/a/shared/f1",
                        "s3://b/a/shared/f2");
        // An empty field names nothing (the service refuses a missing directory itself).
        assertThat(
                        rule.pathsOf(
                                upload.toBuilder()
                                        .clearExclusiveDir()
                                        .clearReusablePaths()
                                        .build()))
                .containsExactly("s3://b/a/shared");
    }

    @Test
    void restoreShardsNamesEveryFileOfItsDurableCuts() {
        RestoreShardsRequest restore =
                RestoreShardsRequest.newBuilder()
                        .setTable("t")
                        .addShards(ShardRestore.newBuilder().setShard(0).setDurableCutId("c1"))
                        .addDurableCuts(
                                DurableCut.newBuilder()
                                        .setCutId("c1")
                                        .addFiles(
                                                DurableFile.newBuilder()
                                                        .setPath("s3://b/a/shared/1"))
                                        .addFiles(
                                                DurableFile.newBuilder()
                                                        .setPath("s3://b/a/shared/2"))
                                        .setMetadataPack(
                                                DurableFile.newBuilder()
                                                        .setPath("s3://b/a/chk-1/p1")))
                        .addDurableCuts(
                                DurableCut.newBuilder()
                                        .setCutId("c2")
                                        .addFiles(
                                                DurableFile.newBuilder()
                                                        .setPath("s3://b/x/shared/3")))
                        .build();
        CallRules.Rule rule =
                CallRules.of(KvServiceGrpc.getRestoreShardsMethod().getFullMethodName());
        assertThat(rule.pathsOf(restore))
                .containsExactly(
                        "s3://b/a/shared/1",
                        "s3://b/a/shared/2",
                        "s3://b/a/chk-1/p1",
                        "s3://b/x/shared/3");
    }

    @Test
    void otherCallsNameNoPath() {
        CloneRequest clone =
                CloneRequest.newBuilder().setSourceTable("s").setTargetTable("t").build();
        assertThat(CallRules.of(KvServiceGrpc.getCloneMethod().getFullMethodName()).pathsOf(clone))
                .isEmpty();
    }
}
