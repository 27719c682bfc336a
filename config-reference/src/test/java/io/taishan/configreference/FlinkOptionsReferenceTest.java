package io.taishan.configreference;

import static org.assertj.core.api.Assertions.assertThat;

import example.options.ExampleOptions;
import io.taishan.backend.TaishanOptions;
import io.taishan.configreference.FlinkOptionHolders.DeclaredOption;
import io.taishan.configreference.FlinkOptionHolders.Holder;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.Arrays;
import java.util.List;
import org.apache.flink.configuration.ConfigOption;
import org.junit.jupiter.api.Test;

/** What the Flink options reference is made of, and how a cell is written. */
class FlinkOptionsReferenceTest {

    @Test
    void theScanFindsEveryOptionOfTaishanOptions() {
        List<Holder> holders = FlinkOptionHolders.find(getClass().getClassLoader());
        Holder taishan =
                holders.stream()
                        .filter(h -> h.type() == TaishanOptions.class)
                        .findFirst()
                        .orElseThrow();
        long declared =
                Arrays.stream(TaishanOptions.class.getDeclaredFields())
                        .filter(f -> Modifier.isStatic(f.getModifiers()))
                        .filter(f -> f.getType() == ConfigOption.class)
                        .count();
        assertThat(taishan.options()).hasSize((int) declared).hasSizeGreaterThanOrEqualTo(20);
        assertThat(taishan.options())
                .extracting(o -> o.option().key())
                .contains("taishan.kv.address", "taishan.table.prefix")
                .isSorted();
    }

    @Test
    void everyOptionIsATaishanKeyWithADescription() {
        for (Holder holder : FlinkOptionHolders.find(getClass().getClassLoader())) {
            for (DeclaredOption declared : holder.options()) {
                String where = FlinkOptionHolders.describe(declared.field());
                assertThat(declared.option().key()).as(where).startsWith("taishan.");
                assertThat(new MarkdownFormatter().format(declared.option().description()))
                        .as("description of %s", where)
                        .isNotBlank();
            }
        }
    }

    @Test
    void cellsShowFallbackAndDeprecatedKeysTypesAndEscapedText() {
        String md =
                FlinkOptionsReference.render(
                        List.of(FlinkOptionHolders.holderOf(ExampleOptions.class)));
        assertThat(md)
                .contains(
                        "| `example.new-name` | `5 min` | Duration | Table &lt;prefix&gt;_&lt;id&gt;,"
                                + " a \\| b, 100% sure.<br>Fallback keys: `example.fallback-name`."
                                + "<br>Deprecated keys: `example.old-name`. |")
                .contains(
                        "| `example.list` | `[a, b]` | List&lt;String&gt; | See `x\\|y` for <br>more. |")
                .contains(
                        "| `example.mode` | (none) | Enum | How.<br>Possible values: `FAST`, `SAFE`. |");
    }

    @Test
    void aPackagePrivateOptionIsFoundToo() throws Exception {
        Field field = ExampleOptions.class.getDeclaredField("PACKAGE_PRIVATE_MODE");
        assertThat(Modifier.isPublic(field.getModifiers())).isFalse();
        assertThat(FlinkOptionHolders.holderOf(ExampleOptions.class).options())
                .extracting(o -> o.option().key())
                .containsExactly("example.list", "example.mode", "example.new-name");
    }
}
