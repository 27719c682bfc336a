package io.taishan.configreference;

/** What a table cell of GitHub Markdown needs escaped. */
final class Markdown {
    private Markdown() {}

    /**
     * A pipe would end the cell, and {@code <prefix>} would be taken for an HTML tag and vanish; a
     * line break would end the row.
     */
    static String escapeCell(String text) {
        return text.replace("&", "&amp;")
                .replace("<", "&lt;")
                .replace(">", "&gt;")
                .replace("|", "\\|")
                .replace("\r\n", " ")
                .replace('\n', ' ');
    }

    static String code(String text) {
        return "`" + text.replace("|", "\\|") + "`";
    }
}
