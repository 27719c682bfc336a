/**
 * Flink's side of Taishan checkpoints: the manifest that a standard {@link
 * org.apache.flink.runtime.state.KeyGroupsStateHandle} points at (state meta info plus, per key
 * group, the remote shard snapshot holding its data), and the release of remote snapshots that no
 * checkpoint needs any more.
 */
package io.taishan.snapshot;
