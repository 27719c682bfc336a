package io.taishan.benchmarks.state;

import java.util.ArrayDeque;
import java.util.concurrent.atomic.AtomicReference;
import javax.annotation.Nullable;
import org.apache.flink.api.common.operators.MailboxExecutor;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ExecutionOptions;
import org.apache.flink.runtime.asyncprocessing.EpochManager;
import org.apache.flink.runtime.asyncprocessing.RecordContext;
import org.apache.flink.runtime.asyncprocessing.StateExecutionController;
import org.apache.flink.runtime.asyncprocessing.declare.DeclarationManager;
import org.apache.flink.runtime.state.AsyncKeyedStateBackend;
import org.apache.flink.runtime.state.KeyedStateBackend;
import org.apache.flink.runtime.state.StateBackend;
import org.apache.flink.runtime.state.v2.adaptor.AsyncKeyedStateBackendAdaptor;
import org.apache.flink.util.function.ThrowingRunnable;

/**
 * A keyed operator's asynchronous state as Flink 2's runtime drives it, on one thread and without a
 * job: the keyed backend a task would get for an operator with asynchronous state ({@link #open}),
 * Flink's {@link StateExecutionController} over it with Flink's default buffer sizes, and the
 * task's mailbox, which the calling thread runs whenever the controller waits, exactly where a task
 * thread would.
 *
 * <p>Single-threaded by design: mails from the backend's threads are queued and run only by the
 * calling thread, so callbacks run on the "task thread" as in a job.
 */
final class AsyncStateDriver implements AutoCloseable {
    final AsyncKeyedStateBackend<Long> backend;
    private final StateExecutionController<Long> controller;
    private final TaskMailbox mailbox = new TaskMailbox();
    private final AtomicReference<Throwable> failure = new AtomicReference<>();

    private AsyncStateDriver(AsyncKeyedStateBackend<Long> backend, int keyGroups) {
        this.backend = backend;
        controller =
                new StateExecutionController<>(
                        mailbox,
                        (message, e) -> failure.compareAndSet(null, e),
                        backend.createStateExecutor(),
                        new DeclarationManager(),
                        EpochManager.ParallelMode.SERIAL_BETWEEN_EPOCH,
                        keyGroups,
                        (Integer) flinkDefault("ASYNC_STATE_ACTIVE_BUFFER_SIZE"),
                        (Long) flinkDefault("ASYNC_STATE_ACTIVE_BUFFER_TIMEOUT"),
                        (Integer) flinkDefault("ASYNC_STATE_TOTAL_BUFFER_SIZE"),
                        backend,
                        null);
        backend.setup(controller);
    }

    /**
     * The default of one of Flink 2's async-state options in {@link ExecutionOptions}, looked up
     * when the benchmark runs: in the reactor build, javac follows the kv-server jar's manifest
     * {@code Class-Path} to its Flink 1.20 {@code flink-core}, whose {@code ExecutionOptions} has
     * no such options, ahead of Flink 2's.
     */
    private static Object flinkDefault(String option) {
        try {
            return ((ConfigOption<?>) ExecutionOptions.class.getField(option).get(null))
                    .defaultValue();
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("Flink has no ExecutionOptions." + option, e);
        }
    }

    /**
     * The keyed backend of {@code stateBackend} for an operator with asynchronous state, as Flink's
     * {@code StreamTaskStateInitializerImpl} makes it: the backend's own asynchronous one when it
     * has one, Flink's adaptor over its synchronous one otherwise (RocksDB, HashMap).
     */
    static AsyncStateDriver open(
            StateBackend stateBackend,
            StateBackend.KeyedStateBackendParameters<Long> parameters,
            int keyGroups)
            throws Exception {
        AsyncKeyedStateBackend<Long> backend =
                stateBackend.supportsAsyncKeyedStateBackend()
                        ? stateBackend.createAsyncKeyedStateBackend(parameters)
                        : new AsyncKeyedStateBackendAdaptor<>(
                                stateBackend.createKeyedStateBackend(parameters));
        return new AsyncStateDriver(backend, keyGroups);
    }

    /** Whether Flink serves this backend's requests through its adaptor, one at a time. */
    boolean adapted() {
        return backend instanceof AsyncKeyedStateBackendAdaptor;
    }

    /** The synchronous keyed backend under Flink's adaptor; null when the backend has its own. */
    @Nullable
    KeyedStateBackend<Long> synchronousBackend() {
        return backend instanceof AsyncKeyedStateBackendAdaptor<Long> adaptor
                ? adaptor.getKeyedStateBackend()
                : null;
    }

    /**
     * Processes one record of {@code key}: {@code body} issues its state requests, as a keyed
     * operator's {@code processElement} does between Flink's {@code setAsyncKeyedContextElement}
     * and {@code postProcessElement}. Blocks (running mails) while the in-flight records are at
     * Flink's limit.
     */
    void record(long key, Runnable body) {
        // A record object of its own, as a task's records are: Flink checks by identity that the
        // record releasing a key is the one that held it.
        RecordContext<Long> context = controller.buildContext(new Object(), key);
        context.retain();
        controller.setCurrentContext(context);
        body.run();
        context.release();
        rethrow();
    }

    /** Waits for every record in flight, as Flink does at a checkpoint barrier. */
    void drain() {
        controller.drainInflightRecords(0);
        rethrow();
    }

    private void rethrow() {
        Throwable failed = failure.get();
        if (failed != null) {
            throw new IllegalStateException("a state request or its callback failed", failed);
        }
    }

    @Override
    public void close() throws Exception {
        try {
            drain();
        } finally {
            controller.close();
            backend.dispose();
            backend.close();
        }
    }

    /** The task's mailbox: mails from any thread, run by the driving thread when it yields. */
    private static final class TaskMailbox implements MailboxExecutor {
        private final ArrayDeque<ThrowingRunnable<? extends Exception>> mails = new ArrayDeque<>();

        @Override
        public void execute(
                MailOptions options,
                ThrowingRunnable<? extends Exception> command,
                String descriptionFormat,
                Object... descriptionArgs) {
            synchronized (mails) {
                mails.add(command);
                mails.notifyAll();
            }
        }

        @Override
        public void yield() throws InterruptedException {
            ThrowingRunnable<? extends Exception> mail;
            synchronized (mails) {
                while (mails.isEmpty()) {
                    mails.wait();
                }
                mail = mails.poll();
            }
            run(mail);
        }

        @Override
        public boolean tryYield() {
            ThrowingRunnable<? extends Exception> mail;
            synchronized (mails) {
                mail = mails.poll();
            }
            if (mail == null) {
                return false;
            }
            run(mail);
            return true;
        }

        @Override
        public boolean shouldInterrupt() {
            return false;
        }

        private static void run(ThrowingRunnable<? extends Exception> mail) {
            try {
                mail.run();
            } catch (Exception e) {
                throw new IllegalStateException("a mail failed", e);
            }
        }
    }
}
