package io.taishan.kv.client;

import java.util.List;
import java.util.Objects;

/**
 * A store cut as copied into Flink's checkpoint storage: what a node needs to rebuild it.
 *
 * @param cutId names the cut wherever it is (a random UUID given at its first upload)
 * @param shards the shards whose snapshot it holds, of those an upload asked for (empty where it is
 *     named by a restore)
 * @param files its data files
 * @param metadataPack its other files, packed into one object
 */
public record DurableCut(
        String cutId, List<Integer> shards, List<DurableFile> files, DurableFile metadataPack) {
    public DurableCut {
        Objects.requireNonNull(cutId, "cutId");
        Objects.requireNonNull(metadataPack, "metadataPack");
        shards = List.copyOf(shards);
        files = List.copyOf(files);
    }
}
