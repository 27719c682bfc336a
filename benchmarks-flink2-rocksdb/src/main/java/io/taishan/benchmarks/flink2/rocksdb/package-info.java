/**
 * What only the Flink 2 RocksDB-side build of the Nexmark harness has: Flink's ForSt backend. The
 * rest is the shared source of {@code benchmarks-nexmark}, {@code benchmarks-state} and {@code
 * benchmarks-rocksdb}.
 */
package io.taishan.benchmarks.flink2.rocksdb;
