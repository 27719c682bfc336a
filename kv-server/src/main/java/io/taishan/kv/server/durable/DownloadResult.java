package io.taishan.kv.server.durable;

import java.nio.file.Path;
import java.util.List;

/**
 * A completed download: {@code dir} exists and holds exactly these files, each verified by size and
 * CRC32C and fsynced.
 *
 * @param dir the request's target directory
 * @param fileNames the data files, then those unpacked from the metadata pack
 * @param downloadedBytes the bytes read from storage (the pack's own size, not its files')
 */
public record DownloadResult(Path dir, List<String> fileNames, long downloadedBytes) {
    public DownloadResult {
        fileNames = List.copyOf(fileNames);
    }
}
