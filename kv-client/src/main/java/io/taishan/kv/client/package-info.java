/**
 * The Java API of the Taishan KV service ({@link io.taishan.kv.client.KvStore}) and its gRPC
 * implementation: one channel per node, routing by the cluster's shard map, deadlines on every
 * call, bounded retries for idempotent calls, typed exceptions. No Flink dependency.
 */
package io.taishan.kv.client;
