/**
 * The node's observability endpoint: Prometheus text at {@code /metrics} (RPCs from a gRPC
 * interceptor, storage, RocksDB, expiry, JVM), liveness at {@code /health} and readiness at {@code
 * /ready}, all on one plain HTTP port ({@code metrics.port}). Every metric is listed in {@code
 * docs/metrics.md}.
 */
package io.taishan.kv.server.metrics;
