/**
 * Flink 2's asynchronous keyed state (State V2) on Taishan: {@link
 * io.taishan.backend.async.TaishanAsyncKeyedStateBackend} and its {@link
 * io.taishan.backend.async.TaishanStateExecutor}, which serves each batch of state requests with
 * one remote {@code MultiGet} per kv-server node for all the batch's cache misses, then runs the
 * requests through the synchronous backend's states: the same read chain, write path, TTL,
 * checkpoints and timers.
 */
package io.taishan.backend.async;
