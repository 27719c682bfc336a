/**
 * Cuts in Flink's checkpoint storage: moves a store cut's files between the node's disk and a
 * directory of the job's checkpoint storage ({@code s3://}, {@code hdfs://}, {@code file://}),
 * through Flink's own {@code FileSystem} and plugin loader, so a node reaches the storage with the
 * same keys as the Flink cluster. Knows nothing of gRPC, shards, tables or Flink jobs: it moves the
 * files it is told to, where it is told to, and reports what is where.
 *
 * <table>
 *   <caption>Classes</caption>
 *   <tr><th>class</th><th>its job</th></tr>
 *   <tr><td>{@link io.taishan.kv.server.durable.CutTransfers}</td><td>the entry point: Flink's
 *       file systems set up from the {@code durable.*} keys, the transfer threads, {@code upload},
 *       {@code download}, the counters</td></tr>
 *   <tr><td>{@link io.taishan.kv.server.durable.UploadRequest}, {@link
 *       io.taishan.kv.server.durable.UploadResult}</td><td>which files of a cut go where, what may
 *       be reused; each data file's copy, the metadata pack, the bytes written</td></tr>
 *   <tr><td>{@link io.taishan.kv.server.durable.DownloadRequest}, {@link
 *       io.taishan.kv.server.durable.DownloadResult}</td><td>the copies to fetch into a new
 *       directory; what is there once it appeared</td></tr>
 *   <tr><td>{@link io.taishan.kv.server.durable.Transfer}</td><td>one call under way: its result,
 *       cancel, progress; its files in parallel, their retries, the deadline, the cleanup of a
 *       failure</td></tr>
 *   <tr><td>{@link io.taishan.kv.server.durable.RemoteFile}, {@link
 *       io.taishan.kv.server.durable.CutFile}, {@link
 *       io.taishan.kv.server.durable.FileIdentity}</td><td>a copy (path, size, CRC32C); a cut's file
 *       and its copy; what a local file is, for reuse</td></tr>
 *   <tr><td>{@link io.taishan.kv.server.durable.FileOrigins}</td><td>the reuse sidecar: where the
 *       copies of a store's files are</td></tr>
 *   <tr><td>{@link io.taishan.kv.server.durable.TransferFailedException}</td><td>why a call failed
 *       ({@code STORAGE}, {@code MISSING}, {@code CORRUPT}, {@code LOCAL}, {@code TIMED_OUT},
 *       {@code CANCELLED}) and on which path</td></tr>
 *   <tr><td>{@link io.taishan.kv.server.durable.TransferStats}</td><td>the node's counters, which
 *       the metrics endpoint serves</td></tr>
 *   <tr><td>{@code CutUpload}, {@code CutDownload}, {@code MetadataPack}, {@code RemoteStreams},
 *       {@code FlinkFileSystems}</td><td>one upload call; one download call; many small files as
 *       one object; streams that count, checksum and name the path of a failure; Flink's
 *       configuration and plugins</td></tr>
 * </table>
 *
 * <h2>What goes where</h2>
 *
 * <p>A cut's data files ({@code *.sst}; {@code *.blob}) are immutable and shared by later
 * checkpoints: each becomes one object under the job's {@code shared/} directory, named by a random
 * UUID as Flink's RocksDB backend names its shared files. Every other file (MANIFEST, CURRENT,
 * OPTIONS, the server's records) is small and new in every cut: all of them go into one {@code
 * MetadataPack} object (its format is in that class), one PUT per cut instead of one per file. An
 * upload reports, per data file, its copy ({@link io.taishan.kv.server.durable.RemoteFile}: path,
 * size, CRC32C computed while the bytes streamed, so nothing is read twice), the pack's copy, and
 * the bytes it wrote: what the backend's {@code IncrementalRemoteKeyedStateHandle} needs (shared
 * state, private state, checkpointed size).
 *
 * <h2>Reuse</h2>
 *
 * <p>A data file already in storage is referenced, not uploaded, when the request offers a copy
 * under its {@link io.taishan.kv.server.durable.FileIdentity} (store, name, size: why that
 * identifies the bytes, and what the store id must be, is that class's doc); a reused copy costs no
 * request to the storage. The rule of what may be offered is Flink's RocksDB backend's: only copies
 * in the last checkpoint Flink confirmed ({@code notifyCheckpointComplete}), none for a full
 * checkpoint or a savepoint, because the JobManager deletes the files of checkpoints it subsumed or
 * aborted. The node keeps, beside each cut, where its files' copies are ({@link
 * io.taishan.kv.server.durable.FileOrigins}, written from the upload's or the download's result,
 * the last few copies of each file); the caller filters them by the paths the backend allows. The
 * caller here is the storage's {@code DurableSnapshots} (UploadSnapshot, and RestoreShards of a
 * snapshot the node lacks), which also decides what a file's store id is: the lineage of the
 * RocksDB instance it came from.
 *
 * <h2>Failures</h2>
 *
 * <ul>
 *   <li>A file is tried up to {@code durable.max-attempts} times, {@code durable.retry-backoff}
 *       apart and doubling, when the storage failed in a way that may pass; a missing or corrupt
 *       download, a permission refused ({@code AccessDeniedException}), a scheme without a file
 *       system and a local disk error are not tried again. The whole call has {@code
 *       durable.transfer-timeout}.
 *   <li>The first file that fails for good fails the call: every other file is stopped, and the
 *       caller gets a {@link io.taishan.kv.server.durable.TransferFailedException} naming the path
 *       and the cause. Never a partial result.
 *   <li>A failed upload deletes every object it named and tried to write, and nothing else: each
 *       object's name is a new random UUID, so no other call, job or checkpoint can have it. Files
 *       in storage that the call did not write (those of earlier checkpoints, owned by the
 *       JobManager's {@code SharedStateRegistry}) are never deleted by this package, as ForSt
 *       leaves its {@code NOT_OWNED} files alone.
 *   <li>A crash mid-upload leaves at worst objects under random names that no checkpoint references
 *       (like the files of a TaskManager that dies mid-checkpoint); on an object store not even
 *       those, as an object exists only once its upload completed. Nothing reported them, so
 *       nothing refers to them.
 *   <li>A download writes into a staging directory beside its target, verifies every file (size and
 *       CRC32C: a missing, short, long or altered file is refused naming it), fsyncs, and renames
 *       the directory into place: the target appears whole or not at all. A failed download deletes
 *       its staging directory; a crash leaves it, and {@link
 *       io.taishan.kv.server.durable.CutTransfers#isDownloadLeftover} recognizes it.
 * </ul>
 *
 * <h2>Cost</h2>
 *
 * <p>Per upload: one stat per local file; per data file not reused one object (one PUT, or a
 * multipart upload past the file system's part size) written while its bytes are read once; one
 * object for all metadata files. Per download: one GET per object, the bytes written once and
 * fsynced per file, one rename. {@code durable.transfer-threads} files move at once on the node
 * whatever the calls, so the storage sees a bounded number of connections from it; a call's files
 * wait their turn behind earlier calls'. CRC32C is a JDK intrinsic (60 GB/s over a buffer in cache
 * here, {@code DurableTransferProbe}): the checksum costs nothing next to the storage's bandwidth.
 * Progress is logged every 10 s of a long call.
 *
 * <p>Measured on this 2-core VM ({@code DurableTransferProbe}, 8 files of 32 MiB, 4 threads, load
 * average 6–7 from other builds): {@code file://} upload 0.9–2.2 GB/s (page cache), download
 * 0.55–0.7 GB/s (each file fsynced); s3proxy in the same JVM through {@code flink-s3-fs-hadoop}
 * upload 90–170 MB/s (S3A buffers each part on disk first), download 0.4–0.67 GB/s.
 *
 * <p>Flink's file systems are JVM-wide state ({@code FileSystem.initialize}): the node's {@code
 * durable.*} configuration is the JVM's.
 */
package io.taishan.kv.server.durable;
