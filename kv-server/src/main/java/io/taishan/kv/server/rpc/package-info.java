/**
 * The gRPC layer of a kv-server node: it translates. {@link io.taishan.kv.server.rpc.KvGrpcService}
 * hands each call to the handler of its family, which checks the request whole (names, shard
 * ranges, this node's ownership under its view of the cluster, limits), calls the storage and
 * converts its answer; every failure becomes a status with an error code. Locks, pools of the
 * storage and the rules of a write over several shards are the storage's ({@code
 * io.taishan.kv.server.storage}), never this layer's.
 *
 * <table>
 *   <caption>Classes</caption>
 *   <tr><th>class</th><th>its job</th></tr>
 *   <tr><td>{@link io.taishan.kv.server.rpc.KvGrpcService}</td><td>the service: one line per
 *       call, to its handler</td></tr>
 *   <tr><td>{@code TableRpcs}, {@code DataRpcs}, {@code StreamRpcs}, {@code SnapshotRpcs},
 *       {@code ExpiryRpcs}</td><td>the handlers, one per family of calls</td></tr>
 *   <tr><td>{@code WriteValidator}</td><td>a whole Write checked before anything is
 *       applied</td></tr>
 *   <tr><td>{@code RequestTargets}, {@link io.taishan.kv.server.rpc.RequestLimits}</td><td>the table, shards and snapshot ids a
 *       request names; its sizes against the limits</td></tr>
 *   <tr><td>{@link io.taishan.kv.server.rpc.Responder}, {@link
 *       io.taishan.kv.server.rpc.ErrorStatus}</td><td>answering a call: shutdown refusal, the
 *       network thread or the pool, failures as statuses</td></tr>
 *   <tr><td>{@link io.taishan.kv.server.rpc.CallExecutors}</td><td>which calls run on the
 *       network thread and which on the call pool</td></tr>
 *   <tr><td>{@link io.taishan.kv.server.rpc.ShardOwnership}, {@code NotOwnerException}</td>
 *       <td>which shards this node serves under its view of the cluster; the refusal of the
 *       others, naming the owner and the view</td></tr>
 *   <tr><td>{@code Protos}</td><td>the storage's types as messages</td></tr>
 *   <tr><td>{@link io.taishan.kv.server.rpc.WriteStats}</td><td>what the writes applied, for
 *       the metrics</td></tr>
 * </table>
 *
 * <p>The streamed calls run in {@link io.taishan.kv.server.rpc.stream}.
 */
package io.taishan.kv.server.rpc;
