package io.taishan.kv.client;

/** One key and its value; the value is empty for a keys-only scan. */
public record KvEntry(byte[] key, byte[] value) {}
