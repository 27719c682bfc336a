/**
 * The read path: {@link io.taishan.backend.read.StateReader} asks the TaskManager-wide cache, the
 * pending writes, the shard's Bloom filter, then the server; scans merge pending writes into the
 * server's pages.
 */
package io.taishan.backend.read;
