/**
 * The kv-server's storage: tables of shards, each shard a key range of one of its table's stores (a
 * RocksDB instance per writer, sharing the node's block cache, write buffers and threads); leases
 * and fencing; snapshots as references to cuts (hard-link checkpoints of stores); restore and clone
 * by forking stores from cuts; Bloom filters and TTL expiry per shard; snapshots copied to and
 * fetched from Flink's checkpoint storage. Knows nothing of gRPC or of the cluster.
 *
 * <table>
 *   <caption>Entry classes</caption>
 *   <tr><th>class</th><th>its job</th></tr>
 *   <tr><td>{@link io.taishan.kv.server.storage.StorageEngine}</td><td>the node: data dir and its
 *       layout, table catalog, epochs and the lease floor, open stores, maintenance</td></tr>
 *   <tr><td>{@link io.taishan.kv.server.storage.TableStore}</td><td>one table: leases and which
 *       store holds each shard, opens and restores (the commit of every change of
 *       ownership)</td></tr>
 *   <tr><td>{@link io.taishan.kv.server.storage.TableWrite}</td><td>the rule of a write over
 *       several shards: epochs first, rounds between markers, one cut per store and round</td></tr>
 *   <tr><td>{@link io.taishan.kv.server.storage.Shard}</td><td>one shard: its lease, its reads,
 *       its TTL clock and expiry</td></tr>
 *   <tr><td>{@code RangeStore}, {@code RangeDb}</td><td>a store: one RocksDB instance of shard key
 *       ranges, its cuts, forks and garbage ranges; the prefixed keys</td></tr>
 *   <tr><td>{@link io.taishan.kv.server.storage.SnapshotCatalog}, {@code StoreCut}</td><td>which
 *       cut holds each shard's snapshot; cut reference counts and deletion</td></tr>
 *   <tr><td>{@code ShardFilter}, {@code NodeFilters}, {@code FilterBundle}</td><td>a shard's Bloom
 *       filter: where it comes from, inserts, rebuilds; the node's filter memory and rebuild
 *       threads; many shards' filters in one file</td></tr>
 *   <tr><td>{@link io.taishan.kv.server.storage.ExpirySweeper}</td><td>server-side expiry of
 *       TTL'd state, by the owner's clock</td></tr>
 *   <tr><td>{@link io.taishan.kv.server.storage.DurableSnapshots}, {@code DurableCutRecord}</td>
 *       <td>a snapshot's cuts uploaded to checkpoint storage (durable ids, reuse by lineage), the
 *       cuts a restore lacks fetched from there; its doc is the design</td></tr>
 * </table>
 *
 * <p>Crash safety: every change that tells the server what exists is a file written to a temporary
 * name, fsynced and renamed ({@code DurableFiles}); a change of ownership commits by rewriting the
 * table's lease record, after everything it points to (forks, cleared ranges) is durable, and
 * recovery deletes whatever no committed record references. A cut fetched from checkpoint storage
 * is downloaded into {@code tmp/} (emptied at start), moved into its table's cuts once whole and
 * with its records, and becomes a snapshot by the snapshot record written last.
 */
package io.taishan.kv.server.storage;
