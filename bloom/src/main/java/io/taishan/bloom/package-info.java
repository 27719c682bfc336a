/**
 * The TTL-aware off-heap Bloom filter per shard that answers "surely absent" without a remote call
 * and never gives a false negative. Comes with its own issue; no Flink dependency.
 */
package io.taishan.bloom;
