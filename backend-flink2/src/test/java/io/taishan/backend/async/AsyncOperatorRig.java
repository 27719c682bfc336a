package io.taishan.backend.async;

import io.taishan.backend.TaishanStateBackend;
import io.taishan.backend.read.ReadMetrics;
import java.util.Collection;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RunnableFuture;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.operators.MailboxExecutor;
import org.apache.flink.api.common.state.v2.State;
import org.apache.flink.api.common.state.v2.StateDescriptor;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.fs.CloseableRegistry;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;
import org.apache.flink.runtime.asyncprocessing.EpochManager;
import org.apache.flink.runtime.asyncprocessing.RecordContext;
import org.apache.flink.runtime.asyncprocessing.StateExecutionController;
import org.apache.flink.runtime.asyncprocessing.StateExecutor;
import org.apache.flink.runtime.asyncprocessing.declare.DeclarationManager;
import org.apache.flink.runtime.checkpoint.CheckpointOptions;
import org.apache.flink.runtime.checkpoint.CheckpointType;
import org.apache.flink.runtime.execution.Environment;
import org.apache.flink.runtime.state.AsyncKeyedStateBackend;
import org.apache.flink.runtime.state.CheckpointStorageLocationReference;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyedStateBackendParametersImpl;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.SnapshotResult;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;
import org.apache.flink.runtime.state.memory.MemCheckpointStreamFactory;
import org.apache.flink.runtime.state.ttl.TtlTimeProvider;
import org.apache.flink.util.function.ThrowingRunnable;

/**
 * A keyed operator with asynchronous state, as Flink's runtime drives one, without a job: Taishan's
 * asynchronous backend (keys are {@code Long}s, one subtask owning every key group), Flink's
 * execution controller over it, and a mailbox that the calling thread, the "task thread", empties
 * when it waits for records in flight.
 */
final class AsyncOperatorRig implements AutoCloseable {
    final AsyncKeyedStateBackend<Long> backend;
    final StateExecutionController<Long> controller;
    final AtomicReference<Throwable> failure = new AtomicReference<>();
    private final TestMailbox mailbox = new TestMailbox();
    private final StateExecutor executor;

    /**
     * @param config Taishan options (the kv-server's address among them)
     * @param batchSize the execution controller's batch: its {@code active-buffer-size}
     */
    AsyncOperatorRig(
            Environment env,
            JobID job,
            int keyGroups,
            Configuration config,
            int batchSize,
            Collection<KeyedStateHandle> restored)
            throws Exception {
        TaishanStateBackend stateBackend =
                new TaishanStateBackend().configure(config, getClass().getClassLoader());
        backend =
                stateBackend.createAsyncKeyedStateBackend(
                        new KeyedStateBackendParametersImpl<>(
                                env,
                                job,
                                "rig_op",
                                LongSerializer.INSTANCE,
                                keyGroups,
                                KeyGroupRange.of(0, keyGroups - 1),
                                env.getTaskKvStateRegistry(),
                                TtlTimeProvider.DEFAULT,
                                new UnregisteredMetricsGroup(),
                                restored,
                                new CloseableRegistry()));
        executor = backend.createStateExecutor();
        controller =
                new StateExecutionController<>(
                        mailbox,
                        (message, e) -> failure.compareAndSet(null, e),
                        executor,
                        new DeclarationManager(),
                        EpochManager.ParallelMode.SERIAL_BETWEEN_EPOCH,
                        keyGroups,
                        batchSize,
                        1_000,
                        6_000,
                        backend,
                        null);
        backend.setup(controller);
    }

    <S extends State> S state(StateDescriptor<?> descriptor) throws Exception {
        return backend.getOrCreateKeyedState(
                VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE, descriptor);
    }

    /**
     * Runs {@code body} as the processing of one record of {@code key}: as Flink's keyed operators
     * do, once no earlier record of the key is in flight.
     */
    void record(long key, Runnable body) {
        RecordContext<Long> context = controller.buildContext(new Object(), key);
        context.retain();
        controller.setCurrentContext(context);
        controller.syncPointRequestWithCallback(body::run, false);
        context.release();
    }

    /** Waits for every record in flight; fails with what failed a request or callback. */
    void drain() throws InterruptedException {
        long deadline = System.nanoTime() + 60_000_000_000L;
        while (controller.getInFlightRecordNum() > 0 && failure.get() == null) {
            if (!mailbox.tryYield()) {
                controller.triggerIfNeeded(true);
                Thread.sleep(0, 100_000);
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError(
                        controller.getInFlightRecordNum()
                                + " records still in flight; "
                                + executor
                                + ", mails "
                                + mailbox.mails.size());
            }
        }
        if (failure.get() != null) {
            throw new AssertionError("a request or callback failed", failure.get());
        }
    }

    KeyedStateHandle checkpoint(long id) throws Exception {
        drain();
        RunnableFuture<SnapshotResult<KeyedStateHandle>> future =
                backend.snapshot(
                        id,
                        id,
                        new MemCheckpointStreamFactory(4 << 20),
                        new CheckpointOptions(
                                CheckpointType.CHECKPOINT,
                                CheckpointStorageLocationReference.getDefault()));
        future.run();
        return future.get().getJobManagerOwnedSnapshot();
    }

    ReadMetrics readMetrics() {
        return ((TaishanAsyncKeyedStateBackend<Long>) backend).syncBackend().readMetrics();
    }

    @Override
    public void close() throws Exception {
        drain();
        controller.close();
        backend.dispose();
        backend.close();
    }

    /** The task's mailbox: mails from any thread, run by the rig's thread when it yields. */
    static final class TestMailbox implements MailboxExecutor {
        private final LinkedBlockingQueue<ThrowingRunnable<? extends Exception>> mails =
                new LinkedBlockingQueue<>();

        @Override
        public void execute(
                MailOptions options,
                ThrowingRunnable<? extends Exception> command,
                String descriptionFormat,
                Object... descriptionArgs) {
            mails.add(command);
        }

        @Override
        public void yield() throws InterruptedException {
            run(mails.take());
        }

        @Override
        public boolean tryYield() {
            ThrowingRunnable<? extends Exception> mail = mails.poll();
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
                throw new AssertionError(e);
            }
        }
    }
}
