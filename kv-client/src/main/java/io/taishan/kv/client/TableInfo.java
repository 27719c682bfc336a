package io.taishan.kv.client;

/** A table of the KV service: a name and a shard count fixed for its life. */
public record TableInfo(String name, int shardCount, long createdAtMillis) {}
