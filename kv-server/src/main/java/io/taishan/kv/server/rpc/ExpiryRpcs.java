package io.taishan.kv.server.rpc;

import io.taishan.kv.proto.RegisterTtlStatesRequest;
import io.taishan.kv.proto.RegisterTtlStatesResponse;
import io.taishan.kv.proto.ReportTtlTimeRequest;
import io.taishan.kv.proto.ReportTtlTimeResponse;
import io.taishan.kv.proto.ShardRef;
import io.taishan.kv.proto.TtlStateSpec;
import io.taishan.kv.server.storage.StateTtl;
import io.taishan.kv.server.storage.TableStore;
import java.util.ArrayList;
import java.util.List;

/**
 * Server-side expiry of TTL'd state: which states have a TTL (RegisterTtlStates) and the owners'
 * clocks (ReportTtlTime); the sweeps themselves are the storage's ({@code ExpirySweeper}).
 */
final class ExpiryRpcs {
    private final RequestTargets targets;

    ExpiryRpcs(RequestTargets targets) {
        this.targets = targets;
    }

    RegisterTtlStatesResponse registerTtlStates(RegisterTtlStatesRequest request) {
        TableStore table = targets.table(request.getTable());
        List<StateTtl> states = new ArrayList<>(request.getStatesCount());
        for (TtlStateSpec spec : request.getStatesList()) {
            states.add(Protos.ttlState(table.name(), spec));
        }
        table.registerTtlStates(states);
        return RegisterTtlStatesResponse.getDefaultInstance();
    }

    ReportTtlTimeResponse reportTtlTime(ReportTtlTimeRequest request) {
        TableStore table = targets.table(request.getTable());
        for (ShardRef ref : request.getShardsList()) {
            targets.ownedShard(table, ref.getShard())
                    .reportTtlTime(ref.getEpoch(), request.getTtlTimeMillis());
        }
        return ReportTtlTimeResponse.getDefaultInstance();
    }
}
