/** Restoring a keyed backend: manifests, shard rollback and clone, canonical savepoints. */
package io.taishan.backend.restore;
