package io.taishan.kv.server.security;

import java.util.List;

/**
 * What one token may do: every table and call ({@code *}, an administrator), or the tables whose
 * names start with one of its prefixes. Prefixes match characters, not words: {@code team_a} also
 * covers {@code team_ab_...}, so a prefix should end with a separator ({@code team_a_}).
 *
 * @param name how logs name the credential (never the token): the file's third field, or {@code
 *     line N}
 */
public record Credential(String name, boolean admin, List<String> prefixes) {
    public Credential {
        prefixes = List.copyOf(prefixes);
    }

    /** Whether this credential may touch {@code table}. */
    public boolean covers(String table) {
        if (admin) {
            return true;
        }
        for (String prefix : prefixes) {
            if (table.startsWith(prefix)) {
                return true;
            }
        }
        return false;
    }

    @Override
    public String toString() {
        return "'" + name + "' (" + (admin ? "admin" : "tables " + prefixes) + ")";
    }
}
