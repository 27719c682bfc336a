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

/**
 * A scan that fetches one page when the previous one is used up, so memory holds one page at most.
 * Nothing is fetched before the first {@link #hasNext()}. Not thread-safe.
 */
final class ScanPageIterator implements CloseableIterator<KvEntry> {
    private static final byte[] EMPTY = new byte[0];

    private final ScanRequest firstPage;
    private final Function<ScanRequest, ScanResponse> fetchPage;
    private final Supplier<String> address;

    private Iterator<KeyValue> page = Collections.emptyIterator();
    private ByteString nextStart;
    private boolean more = true;
    private boolean closed;

    ScanPageIterator(
            ScanRequest firstPage,
            Function<ScanRequest, ScanResponse> fetchPage,
            Supplier<String> address) {
        this.firstPage = firstPage;
        this.fetchPage = fetchPage;
        this.address = address;
        this.nextStart = firstPage.getStartKey();
    }

    @Override
    public boolean hasNext() {
        while (!closed) {
            if (page.hasNext()) {
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
        KeyValue entry = page.next();
        byte[] value = entry.getValue().isEmpty() ? EMPTY : entry.getValue().toByteArray();
        return new KvEntry(entry.getKey().toByteArray(), value);
    }

    @Override
    public void close() {
        closed = true;
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
