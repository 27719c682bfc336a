/** Checkpoints and savepoints of a keyed backend: markers, manifests, full snapshots. */
package io.taishan.backend.snapshot;
