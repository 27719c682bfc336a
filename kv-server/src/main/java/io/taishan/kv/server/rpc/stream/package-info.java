/**
 * The server's streamed RPCs: values larger than the inline limit (ReadValue, UploadValue) and
 * Bloom filter fetches (FetchFilter), each sent at the pace the client reads it.
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
 *   <tr><td>{@link io.taishan.kv.server.rpc.stream.FilterSendStream}</td><td>one FetchFilter: the
 *       copy under the lease check, its chunks</td></tr>
 *   <tr><td>{@code PacedSender}</td><td>sends a stream's messages only when the transport is
 *       ready for them</td></tr>
 * </table>
 *
 * <p>The RPC handlers ({@code io.taishan.kv.server.rpc.StreamRpcs}) check each request and start
 * these on their threads; a Write takes its staged values out of the budget's staging area.
 */
package io.taishan.kv.server.rpc.stream;
