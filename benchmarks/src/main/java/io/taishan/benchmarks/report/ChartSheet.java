package io.taishan.benchmarks.report;

import java.awt.Color;
import java.awt.Graphics2D;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import javax.imageio.ImageIO;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;

/**
 * Panels of one size laid out in rows of at most {@code columns} into one PNG: XChart's own grid
 * wants exactly rows × columns charts, and a report leaves out a panel no cell has a figure for.
 */
final class ChartSheet {
    private ChartSheet() {}

    static void write(List<XYChart> panels, int columns, int width, int height, Path file)
            throws IOException {
        int cols = Math.min(columns, panels.size());
        int rows = (panels.size() + cols - 1) / cols;
        BufferedImage sheet =
                new BufferedImage(width * cols, height * rows, BufferedImage.TYPE_INT_RGB);
        Graphics2D g = sheet.createGraphics();
        g.setColor(Color.WHITE);
        g.fillRect(0, 0, sheet.getWidth(), sheet.getHeight());
        for (int i = 0; i < panels.size(); i++) {
            g.drawImage(
                    BitmapEncoder.getBufferedImage(panels.get(i)),
                    (i % cols) * width,
                    (i / cols) * height,
                    null);
        }
        g.dispose();
        ImageIO.write(sheet, "png", file.toFile());
    }
}
