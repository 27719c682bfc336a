/**
 * What a Taishan KV client and server agree on, besides the messages generated from {@code
 * taishan_kv.proto} (package {@code io.taishan.kv.proto}): both ends compute the same thing from
 * these classes, so each is declared once.
 *
 * <table>
 *   <caption>Classes</caption>
 *   <tr><th>class</th><th>what both ends agree on</th></tr>
 *   <tr><td>{@link io.taishan.kv.protocol.ShardPlacement}</td><td>which node owns a shard:
 *       rendezvous hashing of the node names over blocks of shards</td></tr>
 *   <tr><td>{@link io.taishan.kv.protocol.ClusterView}, {@link
 *       io.taishan.kv.protocol.ClusterNode}</td><td>the named nodes of a cluster, the view's
 *       fingerprint, the syntax of a node list</td></tr>
 *   <tr><td>{@link io.taishan.kv.protocol.KvLimits}</td><td>the request limits a server enforces
 *       and a client checks before sending</td></tr>
 *   <tr><td>{@link io.taishan.kv.protocol.ScanRange}</td><td>a key range in unsigned byte order
 *       and the successor of a prefix</td></tr>
 *   <tr><td>{@link io.taishan.kv.protocol.KvErrors}</td><td>the trailer that carries an error
 *       code</td></tr>
 *   <tr><td>{@link io.taishan.kv.protocol.Wire}</td><td>chunk size of streamed values and filters,
 *       the HTTP/2 window</td></tr>
 *   <tr><td>{@link io.taishan.kv.protocol.BearerTokens}</td><td>the {@code authorization} header
 *       and what a token may be</td></tr>
 *   <tr><td>{@link io.taishan.kv.protocol.PemFiles}</td><td>how TLS files are read and
 *       checked</td></tr>
 * </table>
 *
 * <p>{@code KvLimits}, {@code ScanRange}, {@code ClusterView} and {@code ClusterNode} are part of
 * the client's API; the others are shared by the client and the server only, and may change with
 * them, but for the placement function, which a version number on the wire pins.
 */
package io.taishan.kv.protocol;
