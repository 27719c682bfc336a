package io.taishan.plugin;

/** The plugin jar for Flink 2. */
class Flink2PluginJarIT extends PluginJarChecks {
    @Override
    String jarProperty() {
        return "taishan.plugin.jar.flink-2";
    }

    @Override
    boolean forFlink2() {
        return true;
    }
}
