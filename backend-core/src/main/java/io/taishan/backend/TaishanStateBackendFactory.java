package io.taishan.backend;

import org.apache.flink.configuration.IllegalConfigurationException;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.runtime.state.StateBackendFactory;

/**
 * Loads {@link TaishanStateBackend} from {@code state.backend.type:
 * io.taishan.backend.TaishanStateBackendFactory}. Opens no connection.
 */
public class TaishanStateBackendFactory implements StateBackendFactory<TaishanStateBackend> {
    @Override
    public TaishanStateBackend createFromConfig(ReadableConfig config, ClassLoader classLoader)
            throws IllegalConfigurationException {
        return new TaishanStateBackend().configure(config, classLoader);
    }
}
