package io.taishan.plugin;

/** The plugin jar for Flink 1.20. */
class Flink120PluginJarIT extends PluginJarChecks {
    @Override
    String jarProperty() {
        return "taishan.plugin.jar.flink-1.20";
    }

    @Override
    boolean forFlink2() {
        return false;
    }
}
