/**
 * Flink's side of Taishan checkpoints: the manifest (state meta info plus, per key group, the
 * remote shard snapshot holding its data) that a standard {@link
 * org.apache.flink.runtime.state.KeyGroupsStateHandle} points at, or, for a durable checkpoint, the
 * meta state of an {@link org.apache.flink.runtime.state.IncrementalRemoteKeyedStateHandle} whose
 * files are the snapshots' copies in checkpoint storage ({@link
 * io.taishan.snapshot.DurableCheckpointHandles}); and the release of remote snapshots that no
 * checkpoint needs any more.
 */
package io.taishan.snapshot;
