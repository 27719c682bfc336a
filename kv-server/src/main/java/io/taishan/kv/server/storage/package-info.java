/**
 * The kv-server's storage: one RocksDB instance per (table, shard) sharing cache, write buffers and
 * threads; epochs for fencing; durable hard-link snapshots, restore and clone; the table catalog.
 * Knows nothing of gRPC or of the cluster.
 */
package io.taishan.kv.server.storage;
