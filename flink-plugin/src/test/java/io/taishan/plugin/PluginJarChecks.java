package io.taishan.plugin;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.TreeMap;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;

/**
 * The packaged plugin jar as Flink's {@code lib/} would hold it: nothing in it outside {@code
 * io/taishan/} but {@code META-INF/} resources (so no class a job or another connector brings can
 * clash with it), and the relocated gRPC still finds its providers and its epoll transport. The jar
 * is loaded in a class loader of its own over the platform class loader, with only slf4j-api beside
 * it (the cluster's), so nothing of this module's own class path can stand in for what the jar
 * lacks. Each Flink line has its jar, checked alike.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class PluginJarChecks {
    private static final String SHADED = "io.taishan.shaded.";

    /** A versioned class of a multi-release jar; {@code io/taishan/} must follow the prefix. */
    private static final Pattern VERSIONED = Pattern.compile("^META-INF/versions/\\d+/");

    private Path jar;
    private URLClassLoader loader;

    /** The system property (set by the pom) with the path of the jar to check. */
    abstract String jarProperty();

    /** Whether the jar is the one for Flink 2, not 1.20. */
    abstract boolean forFlink2();

    @BeforeAll
    void openJar() throws Exception {
        String path = System.getProperty(jarProperty());
        assertThat(path).as("-D" + jarProperty() + " (set by the pom)").isNotBlank();
        jar = Path.of(path);
        assertThat(jar).as("the shaded plugin jar (mvn package builds it)").isRegularFile();
        URL slf4j =
                org.slf4j.LoggerFactory.class.getProtectionDomain().getCodeSource().getLocation();
        loader =
                new URLClassLoader(
                        "plugin-jar",
                        new URL[] {jar.toUri().toURL(), slf4j},
                        ClassLoader.getPlatformClassLoader());
    }

    @AfterAll
    void closeLoader() throws IOException {
        if (loader != null) {
            loader.close();
        }
    }

    @Test
    void holdsTheBackendCompiledForItsFlinkLine() throws IOException {
        // Flink 2 sets the current key a second way; only its keyed backend base hooks it.
        try (JarFile file = new JarFile(jar.toFile())) {
            JarEntry base =
                    file.getJarEntry("io/taishan/backend/flink/TaishanKeyedStateBackendBase.class");
            assertThat(base).isNotNull();
            String bytes;
            try (InputStream in = file.getInputStream(base)) {
                bytes = new String(in.readAllBytes(), StandardCharsets.ISO_8859_1);
            }
            assertThat(bytes.contains("setCurrentKeyAndKeyGroup")).isEqualTo(forFlink2());
        }
    }

    @Test
    void holdsNothingOutsideIoTaishanButMetaInfResources() throws IOException {
        List<String> outside = new ArrayList<>();
        int classes = 0;
        int relocatedClasses = 0;
        try (JarFile file = new JarFile(jar.toFile())) {
            for (JarEntry entry : Collections.list(file.entries())) {
                String name = entry.getName();
                if (entry.isDirectory()) {
                    continue;
                }
                boolean isClass = name.endsWith(".class");
                String unversioned = VERSIONED.matcher(name).replaceFirst("");
                if (isClass) {
                    classes++;
                    if (unversioned.startsWith("io/taishan/shaded/")) {
                        relocatedClasses++;
                    }
                }
                boolean allowed =
                        unversioned.startsWith("io/taishan/")
                                || (name.startsWith("META-INF/") && !isClass);
                if (!allowed) {
                    outside.add(name);
                }
            }
        }
        assertThat(outside)
                .as("entries outside io/taishan/ and META-INF/ resources (relocate or filter them)")
                .isEmpty();
        assertThat(classes).as("classes in the jar").isGreaterThan(1000);
        assertThat(relocatedClasses).as("relocated classes").isGreaterThan(classes / 2);
    }

    @Test
    void everyServiceFileNamesRelocatedTypesAndItsProvidersLoad() throws Exception {
        Map<String, List<String>> services = serviceFiles();
        assertThat(services)
                .as("service files")
                .containsKeys(
                        SHADED + "io.grpc.ManagedChannelProvider",
                        SHADED + "io.grpc.NameResolverProvider",
                        SHADED + "io.grpc.LoadBalancerProvider");
        for (Map.Entry<String, List<String>> service : services.entrySet()) {
            String type = service.getKey();
            assertThat(type).as("service interface").startsWith(SHADED);
            Class<?> serviceType = Class.forName(type, false, loader);
            List<String> loaded = new ArrayList<>();
            for (Object provider : ServiceLoader.load(serviceType, loader)) {
                loaded.add(provider.getClass().getName());
            }
            assertThat(loaded)
                    .as("providers ServiceLoader finds for " + type)
                    .containsExactlyInAnyOrderElementsOf(service.getValue());
            assertThat(service.getValue()).allSatisfy(p -> assertThat(p).startsWith(SHADED));
        }
    }

    @Test
    void grpcRegistriesFindTheDnsResolverPickFirstAndNetty() throws Exception {
        Class<?> resolverRegistry = loader.loadClass(SHADED + "io.grpc.NameResolverRegistry");
        Object resolvers = resolverRegistry.getMethod("getDefaultRegistry").invoke(null);
        assertThat(resolverRegistry.getMethod("getDefaultScheme").invoke(resolvers))
                .as("the default scheme, dns once DnsNameResolverProvider loaded")
                .isEqualTo("dns");

        Class<?> balancerRegistry = loader.loadClass(SHADED + "io.grpc.LoadBalancerRegistry");
        Object balancers = balancerRegistry.getMethod("getDefaultRegistry").invoke(null);
        assertThat(
                        balancerRegistry
                                .getMethod("getProvider", String.class)
                                .invoke(balancers, "pick_first"))
                .as("the pick_first load balancer")
                .isNotNull();

        Object channels =
                loader.loadClass(SHADED + "io.grpc.ManagedChannelProvider")
                        .getMethod("provider")
                        .invoke(null);
        assertThat(channels.getClass().getName())
                .isEqualTo(SHADED + "io.grpc.netty.shaded.io.grpc.netty.NettyChannelProvider");

        // A channel through the public entry point: target parsing, the dns resolver, the load
        // balancer and Netty's event loop, all from the jar. Nothing listens there; nothing is
        // sent.
        Class<?> builderType = loader.loadClass(SHADED + "io.grpc.ManagedChannelBuilder");
        Class<?> channelType = loader.loadClass(SHADED + "io.grpc.ManagedChannel");
        Object builder =
                builderType.getMethod("forTarget", String.class).invoke(null, "dns:///127.0.0.1:9");
        builderType.getMethod("usePlaintext").invoke(builder);
        Object channel = builderType.getMethod("build").invoke(builder);
        try {
            Object state = channelType.getMethod("getState", boolean.class).invoke(channel, true);
            assertThat(state).isNotNull();
        } finally {
            channelType.getMethod("shutdownNow").invoke(channel);
        }
    }

    @Test
    @EnabledOnOs(
            value = OS.LINUX,
            architectures = {"amd64", "aarch64"})
    void nettysNativeLibrariesLoadUnderTheirRelocatedNames() throws Exception {
        String netty = SHADED + "io.grpc.netty.shaded.io.netty.";
        Class<?> epoll = loader.loadClass(netty + "channel.epoll.Epoll");
        assertThat((Boolean) epoll.getMethod("isAvailable").invoke(null))
                .as(
                        "epoll available; cause: %s",
                        epoll.getMethod("unavailabilityCause").invoke(null))
                .isTrue();
        // tcnative: OpenSSL for a TLS connection to the kv-server.
        Class<?> openSsl = loader.loadClass(netty + "handler.ssl.OpenSsl");
        assertThat((Boolean) openSsl.getMethod("isAvailable").invoke(null))
                .as(
                        "OpenSSL (tcnative) available; cause: %s",
                        openSsl.getMethod("unavailabilityCause").invoke(null))
                .isTrue();
    }

    @Test
    void relocatedCaffeineAndOhcBuildTheirCaches() throws Exception {
        // Caffeine picks a generated cache class by name; OHC generates a class with ASM.
        Class<?> caffeineType =
                loader.loadClass(SHADED + "com.github.benmanes.caffeine.cache.Caffeine");
        Object caffeine = caffeineType.getMethod("newBuilder").invoke(null);
        caffeineType.getMethod("maximumSize", long.class).invoke(caffeine, 10L);
        Object cache = caffeineType.getMethod("build").invoke(caffeine);
        Class<?> cacheType = loader.loadClass(SHADED + "com.github.benmanes.caffeine.cache.Cache");
        cacheType.getMethod("put", Object.class, Object.class).invoke(cache, "k", "v");
        assertThat(cacheType.getMethod("getIfPresent", Object.class).invoke(cache, "k"))
                .isEqualTo("v");

        java.nio.ByteBuffer buffer = java.nio.ByteBuffer.allocate(8).putInt(7);
        loader.loadClass(SHADED + "org.caffinitas.ohc.util.ByteBufferCompat")
                .getMethod("byteBufferFlip", java.nio.ByteBuffer.class)
                .invoke(null, buffer);
        assertThat(buffer.limit()).as("limit after OHC's generated flip").isEqualTo(4);
    }

    private Map<String, List<String>> serviceFiles() throws IOException {
        Map<String, List<String>> services = new TreeMap<>();
        try (JarFile file = new JarFile(jar.toFile())) {
            for (JarEntry entry : Collections.list(file.entries())) {
                String name = entry.getName();
                if (entry.isDirectory() || !name.startsWith("META-INF/services/")) {
                    continue;
                }
                List<String> providers = new ArrayList<>();
                try (InputStream in = file.getInputStream(entry);
                        BufferedReader reader =
                                new BufferedReader(
                                        new InputStreamReader(in, StandardCharsets.UTF_8))) {
                    String line;
                    while ((line = reader.readLine()) != null) {
                        String provider = line.replaceFirst("#.*", "").trim();
                        if (!provider.isEmpty() && !providers.contains(provider)) {
                            providers.add(provider);
                        }
                    }
                }
                services.put(name.substring("META-INF/services/".length()), providers);
            }
        }
        return services;
    }
}
