/**
 * The gRPC service of a kv-server node: request validation, limits, shard ownership in the
 * cluster's static shard map, and the mapping of failures to statuses with error codes.
 */
package io.taishan.kv.server.service;
