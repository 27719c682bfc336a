package io.taishan.configreference;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.net.JarURLConnection;
import java.net.URISyntaxException;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Enumeration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.stream.Stream;
import org.apache.flink.configuration.ConfigOption;

/**
 * Finds every Flink {@link ConfigOption} Taishan declares: every static field of that type in every
 * class under {@code io.taishan} on the class path (directories and jars), whatever its class is
 * called and whether it is public. So a new option, or a new class of options, cannot be left out
 * of the reference.
 */
final class FlinkOptionHolders {
    static final String PACKAGE = "io.taishan";

    private FlinkOptionHolders() {}

    /** One option as declared: the value type comes from the field's type argument. */
    record DeclaredOption(Field field, ConfigOption<?> option, Type valueType) {}

    /** A class that declares options, with its options by key. */
    record Holder(Class<?> type, List<DeclaredOption> options) {}

    /** Every holder, by class name; within a holder, by key. */
    static List<Holder> find(ClassLoader loader) {
        List<Holder> holders = new ArrayList<>();
        Map<String, DeclaredOption> byKey = new HashMap<>();
        for (String className : classNames(loader)) {
            Class<?> type;
            Field[] fields;
            try {
                type = Class.forName(className, false, loader);
                fields = type.getDeclaredFields();
            } catch (ClassNotFoundException | LinkageError e) {
                throw new IllegalStateException(
                        "cannot look for options in " + className + ": " + e, e);
            }
            List<DeclaredOption> options = new ArrayList<>();
            for (Field field : fields) {
                if (Modifier.isStatic(field.getModifiers())
                        && ConfigOption.class.isAssignableFrom(field.getType())) {
                    DeclaredOption declared = read(field);
                    DeclaredOption earlier = byKey.putIfAbsent(declared.option().key(), declared);
                    if (earlier == null) {
                        options.add(declared);
                    } else if (!earlier.option().equals(declared.option())) {
                        throw new IllegalStateException(
                                "option "
                                        + declared.option().key()
                                        + " is declared differently in "
                                        + describe(earlier.field())
                                        + " and "
                                        + describe(declared.field()));
                    }
                }
            }
            if (!options.isEmpty()) {
                options.sort(Comparator.comparing(o -> o.option().key()));
                holders.add(new Holder(type, List.copyOf(options)));
            }
        }
        holders.sort(Comparator.comparing(h -> h.type().getName()));
        return holders;
    }

    /** The options of one class alone, for a reference of classes outside {@link #PACKAGE}. */
    static Holder holderOf(Class<?> type) {
        List<DeclaredOption> options = new ArrayList<>();
        for (Field field : type.getDeclaredFields()) {
            if (Modifier.isStatic(field.getModifiers())
                    && ConfigOption.class.isAssignableFrom(field.getType())) {
                options.add(read(field));
            }
        }
        options.sort(Comparator.comparing(o -> o.option().key()));
        return new Holder(type, List.copyOf(options));
    }

    private static DeclaredOption read(Field field) {
        ConfigOption<?> option;
        try {
            field.setAccessible(true);
            option = (ConfigOption<?>) field.get(null);
        } catch (IllegalAccessException | RuntimeException | LinkageError e) {
            throw new IllegalStateException("cannot read " + describe(field) + ": " + e, e);
        }
        if (option == null) {
            throw new IllegalStateException(describe(field) + " is null");
        }
        if (!(field.getGenericType() instanceof ParameterizedType parameterized)) {
            throw new IllegalStateException(
                    describe(field) + " has no type argument: declare it as ConfigOption<T>");
        }
        return new DeclaredOption(field, option, parameterized.getActualTypeArguments()[0]);
    }

    static String describe(Field field) {
        return field.getDeclaringClass().getName() + "." + field.getName();
    }

    /** Every class file under {@link #PACKAGE}, in every class path entry that has some. */
    private static TreeSet<String> classNames(ClassLoader loader) {
        TreeSet<String> names = new TreeSet<>();
        String root = PACKAGE.replace('.', '/');
        try {
            Enumeration<URL> urls = loader.getResources(root);
            while (urls.hasMoreElements()) {
                URL url = urls.nextElement();
                switch (url.getProtocol()) {
                    case "file" -> addFromDirectory(Path.of(url.toURI()), root, names);
                    case "jar" -> addFromJar((JarURLConnection) url.openConnection(), root, names);
                    default -> throw new IllegalStateException("cannot list classes in " + url);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
        if (names.isEmpty()) {
            throw new IllegalStateException("no class under " + PACKAGE + " on the class path");
        }
        return names;
    }

    private static void addFromDirectory(Path packageDir, String root, TreeSet<String> names)
            throws IOException {
        Path classesDir = packageDir;
        for (int i = 0; i < root.split("/").length; i++) {
            classesDir = classesDir.getParent();
        }
        Path base = classesDir;
        try (Stream<Path> files = Files.walk(packageDir)) {
            files.filter(Files::isRegularFile)
                    .map(file -> base.relativize(file).toString().replace('\\', '/'))
                    .forEach(path -> addIfClass(path, names));
        }
    }

    private static void addFromJar(JarURLConnection connection, String root, TreeSet<String> names)
            throws IOException {
        connection.setUseCaches(false);
        try (JarFile jar = connection.getJarFile()) {
            Enumeration<JarEntry> entries = jar.entries();
            while (entries.hasMoreElements()) {
                String path = entries.nextElement().getName();
                if (path.startsWith(root + "/")) {
                    addIfClass(path, names);
                }
            }
        }
    }

    private static void addIfClass(String path, TreeSet<String> names) {
        if (path.endsWith(".class")
                && !path.endsWith("package-info.class")
                && !path.endsWith("module-info.class")) {
            names.add(path.substring(0, path.length() - ".class".length()).replace('/', '.'));
        }
    }
}
