package io.taishan.configreference;

import java.util.EnumSet;
import org.apache.flink.configuration.description.Formatter;
import org.apache.flink.configuration.description.TextElement;

/**
 * Flink's {@code Description} as Markdown for one table cell, as Flink's own {@code HtmlFormatter}
 * renders it as HTML for Flink's configuration pages.
 */
final class MarkdownFormatter extends Formatter {

    @Override
    protected void formatLink(StringBuilder state, String link, String description) {
        state.append('[').append(Markdown.escapeCell(description)).append("](").append(link);
        state.append(')');
    }

    @Override
    protected void formatLineBreak(StringBuilder state) {
        state.append("<br>");
    }

    @Override
    protected void formatText(
            StringBuilder state,
            String format,
            String[] elements,
            EnumSet<TextElement.TextStyle> styles) {
        if (styles.contains(TextElement.TextStyle.CODE)) {
            // Entities are not decoded inside a code span: only the pipe is escaped there.
            state.append('`')
                    .append(String.format(format.replace("|", "\\|"), (Object[]) elements))
                    .append('`');
        } else {
            state.append(String.format(Markdown.escapeCell(format), (Object[]) elements));
        }
    }

    @Override
    protected void formatList(StringBuilder state, String[] entries) {
        for (String entry : entries) {
            state.append("<br>• ").append(entry);
        }
    }

    @Override
    protected Formatter newInstance() {
        return new MarkdownFormatter();
    }
}
