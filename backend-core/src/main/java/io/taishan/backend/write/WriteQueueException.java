package io.taishan.backend.write;

import javax.annotation.Nullable;
import org.apache.flink.util.FlinkRuntimeException;

/** The write queue cannot take or deliver writes any more; the task must fail over. */
public class WriteQueueException extends FlinkRuntimeException {
    private static final long serialVersionUID = 1L;

    public WriteQueueException(String message, @Nullable Throwable cause) {
        super(message, cause);
    }
}
