/**
 * The read cache: one off-heap OHC cache per TaskManager, shared by all subtasks, keyed by table,
 * shard, shard epoch and key, TTL-aware; a Caffeine on-heap variant. Comes with its own issue; no
 * Flink dependency.
 */
package io.taishan.cache;
