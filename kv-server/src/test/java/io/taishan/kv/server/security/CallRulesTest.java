package io.taishan.kv.server.security;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.MethodDescriptor;
import io.taishan.kv.proto.CloneRequest;
import io.taishan.kv.proto.KvServiceGrpc;
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
}
