package io.taishan.backend.async;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.function.Function;
import org.apache.flink.api.common.state.v2.State;
import org.apache.flink.runtime.asyncprocessing.AbstractStateIterator;
import org.apache.flink.runtime.asyncprocessing.StateRequestHandler;
import org.apache.flink.runtime.asyncprocessing.StateRequestType;

/**
 * A map's entries, keys or values handed to an asynchronous operator a page at a time, as Flink's
 * State V2 API lets a backend do: the first page answers the iteration request, and each further
 * page is an {@code ITERATOR_LOADING} request whose payload is this iterator, served by the {@link
 * TaishanStateExecutor} like any other request, on the task thread.
 *
 * <p>Under it is the synchronous map state's iterator, made while the iteration request ran and so
 * bound to that request's key and namespace whatever the current key is when the next page is
 * loaded; it reads the store a scan page at a time and re-seeks after the last key it returned, so
 * writes made between pages show as they would in RocksDB's re-seeking iterator. Memory per
 * iteration is one page of deserialized elements, however large the map.
 *
 * <p>Cost: a page of {@value #PAGE} elements per loading request, each request one pass through
 * Flink's execution controller; a map of up to {@value #PAGE} entries (the common case) is one page
 * and no loading request.
 */
final class PagedStateIterator<S, T> extends AbstractStateIterator<T> {
    static final int PAGE = 1_000;

    private final State state;
    private final StateRequestType type;
    private final StateRequestHandler handler;
    private final Iterator<S> source;
    private final Function<S, T> element;
    private final boolean more;

    private PagedStateIterator(
            State state,
            StateRequestType type,
            StateRequestHandler handler,
            Iterator<S> source,
            Function<S, T> element,
            List<T> page) {
        super(state, type, handler, page);
        this.state = state;
        this.type = type;
        this.handler = handler;
        this.source = source;
        this.element = element;
        this.more = source.hasNext();
    }

    /**
     * The first page of {@code source}; {@code element} turns what the synchronous iterator returns
     * into what the operator keeps (a detached copy where the source's objects are views).
     */
    static <S, T> PagedStateIterator<S, T> first(
            State state,
            StateRequestType type,
            StateRequestHandler handler,
            Iterator<S> source,
            Function<S, T> element) {
        return new PagedStateIterator<>(
                state, type, handler, source, element, page(source, element));
    }

    /** The page after this one: what an {@code ITERATOR_LOADING} request of this iterator gets. */
    PagedStateIterator<S, T> next() {
        return new PagedStateIterator<>(
                state, type, handler, source, element, page(source, element));
    }

    private static <S, T> List<T> page(Iterator<S> source, Function<S, T> element) {
        List<T> page = new ArrayList<>();
        while (page.size() < PAGE && source.hasNext()) {
            page.add(element.apply(source.next()));
        }
        return page;
    }

    @Override
    public boolean hasNextLoading() {
        return more;
    }

    @Override
    protected Object nextPayloadForContinuousLoading() {
        return this;
    }
}
