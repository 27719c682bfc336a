/**
 * The half of the admin CLI's {@code gc} that needs Flink: which remote shard snapshots the
 * retained checkpoints and savepoints an operator keeps reference ({@link
 * io.taishan.snapshot.gc.KeptCheckpointReader}), printed for the admin by {@link
 * io.taishan.snapshot.gc.KeptSnapshotsMain}, which it runs in a JVM of its own.
 */
package io.taishan.snapshot.gc;
