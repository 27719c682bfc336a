package io.taishan.kv.server.rpc.stream;

import io.grpc.stub.ServerCallStreamObserver;
import java.io.IOException;

/**
 * Sends a server stream's messages from a thread of its own at the pace the client takes them
 * (waits while the call is not ready), so a slow reader holds back only its own stream and no more
 * than one message is buffered for it. Made while the call is being started: gRPC takes its ready
 * and cancel handlers only then.
 */
final class PacedSender<T> {
    private final ServerCallStreamObserver<T> call;
    private final Object readiness = new Object();

    PacedSender(ServerCallStreamObserver<T> call) {
        this.call = call;
        call.setOnReadyHandler(this::wakeUp);
        call.setOnCancelHandler(this::wakeUp);
    }

    private void wakeUp() {
        synchronized (readiness) {
            readiness.notifyAll();
        }
    }

    void send(T message) throws ClientGone {
        synchronized (readiness) {
            while (!call.isReady()) {
                if (call.isCancelled()) {
                    throw new ClientGone();
                }
                try {
                    // Woken by onReady or onCancel; the timeout only guards a lost wake-up.
                    readiness.wait(100);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new ClientGone();
                }
            }
        }
        call.onNext(message);
    }

    /** The client cancelled the stream or its deadline passed. */
    static final class ClientGone extends IOException {
        private static final long serialVersionUID = 1L;

        ClientGone() {
            super("the client is gone");
        }
    }
}
