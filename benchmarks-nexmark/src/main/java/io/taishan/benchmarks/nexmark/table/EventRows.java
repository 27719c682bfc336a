package io.taishan.benchmarks.nexmark.table;

import static org.apache.flink.table.api.DataTypes.BIGINT;
import static org.apache.flink.table.api.DataTypes.FIELD;
import static org.apache.flink.table.api.DataTypes.INT;
import static org.apache.flink.table.api.DataTypes.ROW;
import static org.apache.flink.table.api.DataTypes.STRING;
import static org.apache.flink.table.api.DataTypes.TIMESTAMP;

import io.taishan.benchmarks.nexmark.generator.model.Auction;
import io.taishan.benchmarks.nexmark.generator.model.Bid;
import io.taishan.benchmarks.nexmark.generator.model.Person;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.types.logical.RowType;

/**
 * Events as rows of Nexmark's {@code datagen} table ({@code ddl_gen.sql}): {@code event_type} (0
 * person, 1 auction, 2 bid) and one of three nested rows. A port of nexmark-flink's {@code
 * RowDataEventDeserializer} and {@code NexmarkTableSource.NEXMARK_SCHEMA}.
 */
public final class EventRows {
    public static final RowType ROW_TYPE =
            (RowType)
                    ROW(
                                    FIELD("event_type", INT()),
                                    FIELD(
                                            "person",
                                            ROW(
                                                    FIELD("id", BIGINT()),
                                                    FIELD("name", STRING()),
                                                    FIELD("emailAddress", STRING()),
                                                    FIELD("creditCard", STRING()),
                                                    FIELD("city", STRING()),
                                                    FIELD("state", STRING()),
                                                    FIELD("dateTime", TIMESTAMP(3)),
                                                    FIELD("extra", STRING()))),
                                    FIELD(
                                            "auction",
                                            ROW(
                                                    FIELD("id", BIGINT()),
                                                    FIELD("itemName", STRING()),
                                                    FIELD("description", STRING()),
                                                    FIELD("initialBid", BIGINT()),
                                                    FIELD("reserve", BIGINT()),
                                                    FIELD("dateTime", TIMESTAMP(3)),
                                                    FIELD("expires", TIMESTAMP(3)),
                                                    FIELD("seller", BIGINT()),
                                                    FIELD("category", BIGINT()),
                                                    FIELD("extra", STRING()))),
                                    FIELD(
                                            "bid",
                                            ROW(
                                                    FIELD("auction", BIGINT()),
                                                    FIELD("bidder", BIGINT()),
                                                    FIELD("price", BIGINT()),
                                                    FIELD("channel", STRING()),
                                                    FIELD("url", STRING()),
                                                    FIELD("dateTime", TIMESTAMP(3)),
                                                    FIELD("extra", STRING()))))
                            .getLogicalType();

    private EventRows() {}

    /** One event of {@code NexmarkGenerator#event} as a {@code datagen} row. */
    public static RowData toRow(Object event) {
        GenericRowData row = new GenericRowData(4);
        if (event instanceof Person p) {
            row.setField(0, 0);
            row.setField(1, person(p));
        } else if (event instanceof Auction a) {
            row.setField(0, 1);
            row.setField(2, auction(a));
        } else if (event instanceof Bid b) {
            row.setField(0, 2);
            row.setField(3, bid(b));
        } else {
            throw new IllegalArgumentException("not a Nexmark event: " + event);
        }
        return row;
    }

    private static RowData person(Person person) {
        return GenericRowData.of(
                person.id(),
                StringData.fromString(person.name()),
                StringData.fromString(person.emailAddress()),
                StringData.fromString(person.creditCard()),
                StringData.fromString(person.city()),
                StringData.fromString(person.state()),
                TimestampData.fromEpochMillis(person.dateTime()),
                StringData.fromString(person.extra()));
    }

    private static RowData auction(Auction auction) {
        return GenericRowData.of(
                auction.id(),
                StringData.fromString(auction.itemName()),
                StringData.fromString(auction.description()),
                auction.initialBid(),
                auction.reserve(),
                TimestampData.fromEpochMillis(auction.dateTime()),
                TimestampData.fromEpochMillis(auction.expires()),
                auction.seller(),
                auction.category(),
                StringData.fromString(auction.extra()));
    }

    private static RowData bid(Bid bid) {
        return GenericRowData.of(
                bid.auction(),
                bid.bidder(),
                bid.price(),
                StringData.fromString(bid.channel()),
                StringData.fromString(bid.url()),
                TimestampData.fromEpochMillis(bid.dateTime()),
                StringData.fromString(bid.extra()));
    }
}
