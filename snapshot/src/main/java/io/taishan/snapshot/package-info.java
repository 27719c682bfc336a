/**
 * Flink's side of checkpoints: the {@code KeyGroupsStateHandle} whose stream is the Taishan
 * manifest, the snapshot strategy, restore and the lifecycle of remote shard snapshots.
 */
package io.taishan.snapshot;
