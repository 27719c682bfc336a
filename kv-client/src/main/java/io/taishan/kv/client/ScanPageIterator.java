package io.taishan.kv.client;

import com.google.protobuf.ByteString;
import io.taishan.kv.proto.ErrorCode;
import io.taishan.kv.proto.KeyValue;
import io.taishan.kv.proto.ScanRequest;
import io.taishan.kv.proto.ScanResponse;
import java.util.Collections;
import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.function.Function;
import java.util.function.Supplier;
import javax.annotation.Nullable;

/**
 * A scan that fetches one page when the previous one is used up, so memory holds one page at most.
 * Nothing is fetched before the first {@link #hasNext()}. Not thread-safe.
 */
final class ScanPageIterator implements CloseableIterator<KvEntry> {
    private static final byte[] EMPTY = new byte[0];

    private final ScanRequest firstPage;
    private final Function<ScanRequest, ScanResponse> fetchPage;
    private final Function<ByteString, byte[]> readChunked;
    private final Supplier<String> address;
    @Nullable private KvEntry next;

    private Iterator<KeyValue> page = Collections.emptyIterator();
    private ByteString nextStart;
    private boolean more = true;
    private boolean closed;

    ScanPageIterator(
            ScanRequest firstPage,
            Function<ScanRequest, ScanResponse> fetchPage,
            Function<ByteString, byte[]> readChunked,
            Supplier<String> address) {
        this.firstPage = firstPage;
        this.fetchPage = fetchPage;
        this.readChunked = readChunked;
        this.address = address;
        this.nextStart = firstPage.getStartKey();
    }

    /**
     * A large value ({@code value_chunked}) is read by itself when its entry is reached, after the
     * page: it may be newer than the page, and an entry deleted in between is left out.
     */
    @Override
    public boolean hasNext() {
        while (!closed) {
            if (next != null) {
                return true;
            }
            if (page.hasNext()) {
                KeyValue entry = page.next();
                byte[] value;
                if (entry.getValueChunked()) {
                    value = readChunked.apply(entry.getKey());
                    if (value == null) {
                        continue;
                    }
                } else {
                    value = entry.getValue().isEmpty() ? EMPTY : entry.getValue().toByteArray();
                }
                next = new KvEntry(entry.getKey().toByteArray(), value);
                return true;
            }
            if (!more) {
                return false;
            }
            fetch();
        }
        return false;
    }

    @Override
    public KvEntry next() {
        if (!hasNext()) {
            throw new NoSuchElementException();
        }
        KvEntry entry = next;
        next = null;
        return entry;
    }

    @Override
    public void close() {
        closed = true;
        next = null;
        page = Collections.emptyIterator();
    }

    private void fetch() {
        ScanRequest request = firstPage.toBuilder().setStartKey(nextStart).build();
        ScanResponse response = fetchPage.apply(request);
        page = response.getEntriesList().iterator();
        more = response.getHasMore();
        if (more) {
            ByteString resumeAt = response.getNextStartKey();
            // A server that does not move forward would make this loop forever.
            if (ByteString.unsignedLexicographicalComparator().compare(resumeAt, nextStart) <= 0) {
                throw new KvException(
                        ErrorCode.ERROR_CODE_UNSPECIFIED,
                        "scan of table '"
                                + firstPage.getTable()
                                + "' shard "
                                + firstPage.getShard().getShard()
                                + " made no progress: next page starts at "
                                + RequestSplitter.hexPreview(resumeAt)
                                + ", not after "
                                + RequestSplitter.hexPreview(nextStart),
                        address.get(),
                        null);
            }
            nextStart = resumeAt;
        }
    }
}
