/**
 * The server's streamed RPCs: values larger than the inline limit (ReadValue, UploadValue) and
 * Bloom filter fetches (FetchFilter, FetchFilters), each sent at the pace the client reads it. The
 * design of large values is written down here, once; the kv-server README, the client and the
 * backend link to it.
 *
 * <table>
 *   <caption>Classes</caption>
 *   <tr><th>class</th><th>its job</th></tr>
 *   <tr><td>{@link io.taishan.kv.server.rpc.stream.LargeValueBudget}</td><td>the heap every value
 *       in transit holds, the staged uploads, the large-value threads</td></tr>
 *   <tr><td>{@link io.taishan.kv.server.rpc.stream.ValueReadStream}</td><td>one ReadValue: size,
 *       reservation, whole read, chunks</td></tr>
 *   <tr><td>{@link io.taishan.kv.server.rpc.stream.ValueUpload}</td><td>one UploadValue:
 *       reservation before the first chunk, staging for the Write</td></tr>
 *   <tr><td>{@link io.taishan.kv.server.rpc.stream.FilterSendStream}</td><td>one FetchFilter or
 *       FetchFilters: each copy under the lease check, its chunks, a shard refused alone</td></tr>
 *   <tr><td>{@code PacedSender}</td><td>sends a stream's messages only when the transport is
 *       ready for them</td></tr>
 * </table>
 *
 * <p>The RPC handlers ({@code io.taishan.kv.server.rpc.StreamRpcs}) check each request and start
 * these on their threads; a Write takes its staged values out of the budget's staging area.
 *
 * <h2>Large values</h2>
 *
 * <p>A value of at most {@code limits.max-inline-value-bytes} (1 MiB) travels inside its {@code
 * Get}, {@code MultiGet}, {@code Scan} or {@code Write} message; nearly every Flink value is one of
 * those. A larger one, up to {@code limits.max-value-bytes} (512 MiB), never travels as one
 * message, in chunks of {@code Wire.CHUNK_BYTES} (1 MiB), and it is <b>stored whole</b>: one
 * RocksDB value under its key, as Flink's RocksDB backend stores it.
 *
 * <ul>
 *   <li><b>Reads.</b> {@code Get}, {@code MultiGet} and {@code Scan} answer a large value with
 *       {@code value_chunked = true} and no bytes; the client then reads it by {@code ReadValue} on
 *       its bulk connection: a header (found, size), then the value in chunks, each sent only when
 *       the transport is ready for it. The value is read a second time, so it may be newer than the
 *       rest of the answer (or gone: a scan then leaves the entry out). A {@code MultiGet} answer
 *       holds at most {@code limits.max-request-bytes} of inline values; values past that are
 *       chunked too, so no answer grows with its key count.
 *   <li><b>Writes.</b> For each put or append operand over the inline limit the client first
 *       streams the value by {@code UploadValue} (a header with the shard and size, then slices of
 *       the caller's own array, none copied) into the server's staging area, which answers an id;
 *       then it sends the batch's {@code Write} as always, its {@code Put} or {@code Append} naming
 *       {@code staged_value_id} instead of carrying the bytes. The {@code Write} stays one ordered
 *       request, atomic per shard, fenced like any other; it takes the staged value out. A staged
 *       value no {@code Write} takes within 2 minutes is dropped.
 *   <li><b>Why stored whole, not chunked under derived keys.</b> Everything else stays exact for
 *       free: appends are still one RocksDB merge, deletes and range deletes one tombstone,
 *       snapshots, restores and clones hard links, the Bloom filter one key, TTL expiry one check.
 *       The price is that RocksDB's Java API reads a value only whole, so whoever reads a 512 MiB
 *       value holds 512 MiB for a moment, which the budget below bounds.
 *   <li><b>The server's heap</b> for large values is a byte budget, {@code
 *       large-values.memory-bytes} (768 MiB, at most half the heap): a {@code ReadValue} first
 *       reads the value's size without the value (RocksDB copies into a caller's array only what
 *       fits, and tells the full size), reserves that many bytes, and only then reads it onto the
 *       heap; an {@code UploadValue} reserves its header's size before it asks for its first chunk
 *       (inbound flow control: a client cannot push what the server has no room for) and keeps it
 *       until its {@code Write} ends. A transfer that does not fit waits, on one of 8 large-value
 *       threads, never on a network thread or the call pool, within the caller's deadline; one
 *       larger than the whole budget runs when no other holds any. So N clients reading 512 MiB
 *       values cost the server at most max(budget, one value) of heap, not N × 512 MiB; the others
 *       queue. Bounded reads of small values never allocate more than they return: {@code Get},
 *       {@code MultiGet} and {@code Scan} read through a per-thread 16 KiB buffer, and a value
 *       above the inline limit is answered chunked without ever being put on the heap.
 *   <li><b>Lists.</b> {@code ListState.add} appends a small operand; the list can grow past any
 *       size. A read of a list over {@code limits.max-value-bytes} fails with {@code
 *       LIMIT_EXCEEDED} naming the limit and saying that it grew by appends (every operand fit,
 *       their join does not); it stays stored, and a put or delete of the key still works.
 *       10,000,000 4-byte elements are a 50 MB value.
 *   <li><b>Above the cap</b> a put or append is refused before anything is sent, by the client
 *       ({@code LimitExceededException: value of 536870913 bytes (put, shard 3, key 0x…) exceeds
 *       the server's limit of 536870912 bytes (limits.max-value-bytes)}) and by the server alike;
 *       an {@code UploadValue} header over it is refused the same way. Never a bare gRPC {@code
 *       RESOURCE_EXHAUSTED}.
 *   <li><b>Expiry sweeps</b> read only the first 9 bytes of each value and map entry (the
 *       timestamp), so a 512 MiB TTL'd value costs a sweep nothing on the heap; a list is read
 *       whole up to 1 MiB, and a larger list is never expired by the server (Flink's TTL wrapper
 *       still drops its expired elements when it reads it).
 *   <li><b>Deadlines</b>: a large transfer gets the request timeout plus one second per 8 MiB (512
 *       MiB: + 64 s), so a hung server still ends it; both kinds are retried whole on transient
 *       failures (they are idempotent; the {@code Write} is not retried, as always).
 *   <li><b>Compatibility.</b> A client older than large values sends every value inline: up to 1
 *       MiB it works; a larger one gets {@code LIMIT_EXCEEDED} naming {@code
 *       limits.max-inline-value-bytes} (set it to {@code 8m} to serve old clients as before). A new
 *       client of an older server (no {@code max_inline_value_bytes} in {@code ClusterInfo}) sends
 *       every value inline, within that server's 8 MiB.
 * </ul>
 *
 * <table>
 *   <caption>Cost per large value of S bytes (S &gt; 1 MiB)</caption>
 *   <tr><th></th><th>client</th><th>server heap</th><th>server native (RocksDB)</th><th>round
 *       trips</th></tr>
 *   <tr><td>put / append</td><td>the value itself (the backend's write queue holds that same
 *       array until the write is acknowledged; the batch does not copy it) + the chunks gRPC has
 *       framed, at most a 4 MiB window</td><td>S, staged, from the header until its {@code Write}
 *       ends (budgeted)</td><td>S in the {@code WriteBatch}, S in the memtable; flushed as an SST
 *       of about S</td><td>{@code UploadValue} stream + the {@code Write}</td></tr>
 *   <tr><td>read ({@code Get}, or an entry of {@code MultiGet} / {@code Scan})</td><td>one array
 *       of S + one 1 MiB chunk being copied</td><td>16 KiB for the answer that says "chunked";
 *       then S while it streams (budgeted)</td><td>the value is looked up 3 times (chunked answer,
 *       size, whole read); each pins its block or copies a memtable entry, S at most, freed at
 *       once</td><td>the answer + {@code ReadValue} stream</td></tr>
 *   <tr><td>stored</td><td>-</td><td>-</td><td>one value; compactions rewrite it like any other
 *       (below)</td><td>-</td></tr>
 *   <tr><td>small values (≤ 1 MiB)</td><td>unchanged</td><td>one array per value (read into the
 *       16 KiB buffer and copied out; 16 KiB to 1 MiB read twice)</td><td>unchanged</td>
 *       <td>unchanged</td></tr>
 * </table>
 *
 * <p>What a large value costs other shards: RocksDB's flush and compaction threads ({@code
 * rocksdb.background-threads}, 2, shared by all stores) write each large value at least once per
 * level it passes, and a value larger than {@code rocksdb.store-write-buffer-bytes} (32 MiB) fills
 * its store's memtable at once, so a stream of large puts keeps them busy; reads are not held up by
 * that, and writes of other stores only when their own memtables wait for a flush thread. {@code
 * LargeValueStallProbe} (a {@code main} in the kv-server's tests) measures small {@code Get}s of
 * one shard while another client writes, then reads, 64 MiB values of another shard back to back.
 * Integrated BlobDB (large values in blob files, out of compaction) would cut that rewriting; it is
 * not on, since its files would need the snapshot, restore and size code to handle them. Measured:
 * {@code docs/benchmarks.md}, <i>Large values</i>.
 *
 * <h2>Filter fetches</h2>
 *
 * <p>How a {@code FetchFilter} streams, and where the filter it sends comes from: the kv-server
 * README, <i>Bloom filters</i>, where the filter's whole lifecycle is written down.
 */
package io.taishan.kv.server.rpc.stream;
