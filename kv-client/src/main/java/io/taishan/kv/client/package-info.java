/**
 * The Java API of the Taishan KV service ({@link io.taishan.kv.client.KvStore}, with its facets
 * {@code filters()}, {@code ttl()} and {@code admin()}) and its gRPC implementation, made by {@link
 * io.taishan.kv.client.KvStores#connect}: connections per node, routing by the placement of the
 * cluster the nodes describe (refreshed when it changes), deadlines on every call, bounded retries
 * for idempotent calls, typed exceptions. No Flink dependency.
 */
package io.taishan.kv.client;
