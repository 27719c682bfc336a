package io.taishan.kv.client;

import java.util.Iterator;

/** An iterator over remote data that holds resources until closed. */
public interface CloseableIterator<T> extends Iterator<T>, AutoCloseable {
    @Override
    void close();
}
