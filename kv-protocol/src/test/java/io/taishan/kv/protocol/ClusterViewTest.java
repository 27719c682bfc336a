package io.taishan.kv.protocol;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

class ClusterViewTest {

    @Test
    void aNodeListIsReadInAnyOrderAndKeptInNameOrder() {
        ClusterView view = ClusterView.parse(" kv2=10.0.0.2:7600 , kv1=10.0.0.1:7600,kv3=h3:1 ,");
        assertThat(view.nodes())
                .containsExactly(
                        new ClusterNode("kv1", "10.0.0.1:7600"),
                        new ClusterNode("kv2", "10.0.0.2:7600"),
                        new ClusterNode("kv3", "h3:1"));
        assertThat(view.indexOf("kv3")).isEqualTo(2);
        assertThat(view.indexOf("kv9")).isEqualTo(-1);
        assertThat(view).hasToString("kv1=10.0.0.1:7600,kv2=10.0.0.2:7600,kv3=h3:1");
        assertThat(view.nameList()).isEqualTo("kv1, kv2, kv3");
        assertThat(ClusterView.parse(view.toString())).isEqualTo(view);
    }

    @Test
    void theFingerprintIsTheContentsWhateverTheOrder() {
        ClusterView a = ClusterView.parse("kv1=h1:1,kv2=h2:2,kv3=h3:3");
        ClusterView b = ClusterView.parse("kv3=h3:3,kv1=h1:1,kv2=h2:2");
        assertThat(b.fingerprint()).isEqualTo(a.fingerprint());
        assertThat(a.fingerprintHex()).hasSize(16).matches("[0-9a-f]{16}");
        // A moved node, a renamed node, one more or one less: all other views.
        assertThat(ClusterView.parse("kv1=h1:1,kv2=h9:2,kv3=h3:3").fingerprint())
                .isNotEqualTo(a.fingerprint());
        assertThat(ClusterView.parse("kv1=h1:1,kv2=h2:2,kv4=h3:3").fingerprint())
                .isNotEqualTo(a.fingerprint());
        assertThat(ClusterView.parse("kv1=h1:1,kv2=h2:2").fingerprint())
                .isNotEqualTo(a.fingerprint());
        assertThat(ClusterView.parse("kv1=h1:1,kv2=h2:2,kv3=h3:3,kv4=h4:4").fingerprint())
                .isNotEqualTo(a.fingerprint());
        // Part of the protocol (the server sends it, the client computes it too): pinned.
        assertThat(a.fingerprintHex()).isEqualTo(GOLDEN_FINGERPRINT);
    }

    private static final String GOLDEN_FINGERPRINT = "213bc54e3a2d54b2";

    @Test
    void ownersAreTheNamesPlacement() {
        ClusterView view = ClusterView.parse("b=h2:2,a=h1:1,c=h3:3");
        ShardPlacement placement = ShardPlacement.of(List.of("c", "a", "b"));
        for (int s = 0; s < 1000; s++) {
            assertThat(view.owner(s, 1000).name()).isEqualTo(placement.ownerNameOf(s, 1000));
        }
    }

    @Test
    void anEntryWithoutANameIsRefusedSayingWhatToWrite() {
        assertThatThrownBy(() -> ClusterView.parse("10.0.0.1:7600,10.0.0.2:7600"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage(
                        "node '10.0.0.1:7600' has no name: write name=host:port, e.g."
                                + " kv1=10.0.0.1:7600 (shards are placed by node name, not by"
                                + " position in the list)");
    }

    @Test
    void badListsAreRefusedNamingTheProblem() {
        assertThatThrownBy(() -> ClusterView.parse("kv1=h1:1,kv1=h2:2"))
                .hasMessage("node name 'kv1' given twice");
        assertThatThrownBy(() -> ClusterView.parse("kv1=h1:1,kv2=h1:1"))
                .hasMessage("address h1:1 given to both kv1 and kv2");
        assertThatThrownBy(() -> ClusterView.parse("k v=h1:1"))
                .hasMessage("bad node name 'k v': expected 1 to 64 of A-Z a-z 0-9 _ . -");
        assertThatThrownBy(() -> ClusterView.parse("=h1:1"))
                .hasMessage("bad node name '': expected 1 to 64 of A-Z a-z 0-9 _ . -");
        assertThatThrownBy(() -> ClusterView.parse("kv1=h1"))
                .hasMessage("bad node address 'h1': expected host:port");
        assertThatThrownBy(() -> ClusterView.parse("kv1=h1:70000"))
                .hasMessage("bad node address 'h1:70000': expected host:port");
        assertThatThrownBy(() -> ClusterView.parse(" , ")).hasMessage("no node in ' , '");
        assertThatThrownBy(() -> ClusterView.of(List.of()))
                .hasMessage("a cluster has at least one node");
    }
}
