/*
 * Licensed to the Apache Software Foundation (ASF) under one
 * or more contributor license agreements.  See the NOTICE file
 * distributed with this work for additional information
 * regarding copyright ownership.  The ASF licenses this file
 * to you under the Apache License, Version 2.0 (the
 * "License"); you may not use this file except in compliance
 * with the License.  You may obtain a copy of the License at
 *
 *     http://www.apache.org/licenses/LICENSE-2.0
 *
 * Unless required by applicable law or agreed to in writing, software
 * distributed under the License is distributed on an "AS IS" BASIS,
 * WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
 * See the License for the specific language governing permissions and
 * limitations under the License.
 */
package io.taishan.benchmarks.nexmark.generator.model;

import static io.taishan.benchmarks.nexmark.generator.model.StringsGenerator.nextString;

import io.taishan.benchmarks.nexmark.generator.GeneratorConfig;
import java.util.SplittableRandom;

/**
 * Generates bids.
 *
 * <p>Upstream draws the hot URLs and the channel table from an unseeded random at class load; here
 * from a fixed seed, so every JVM has the same ones. Upstream also adds {@code FIRST_PERSON_ID} to
 * the bidder twice; that is kept, so bidder ids are those of nexmark-flink.
 */
public final class BidGenerator {

    /**
     * Fraction of people/auctions which may be 'hot' sellers/bidders/auctions are 1 over these
     * values.
     */
    private static final int HOT_AUCTION_RATIO = 100;

    private static final int HOT_BIDDER_RATIO = 100;

    private static final int HOT_CHANNELS_RATIO = 2;

    private static final int CHANNELS_NUMBER = 10_000;

    private static final long CHANNELS_SEED = 0x6368616e6e656cL;

    private static final String[] HOT_CHANNELS =
            new String[] {"Google", "Facebook", "Baidu", "Apple"};

    private static final String[] HOT_URLS;
    private static final String[] CHANNEL_NAMES = new String[CHANNELS_NUMBER];
    private static final String[] CHANNEL_URLS = new String[CHANNELS_NUMBER];

    static {
        // Upstream's order of draws: the four hot URLs, then the channel table.
        SplittableRandom random = new SplittableRandom(CHANNELS_SEED);
        HOT_URLS =
                new String[] {
                    getBaseUrl(random), getBaseUrl(random), getBaseUrl(random), getBaseUrl(random)
                };
        for (int i = 0; i < CHANNELS_NUMBER; ++i) {
            String url = getBaseUrl(random);
            if (random.nextInt(10) > 0) {
                url = url + "&channel_id=" + Math.abs(Integer.reverse(i));
            }
            CHANNEL_NAMES[i] = "channel-" + i;
            CHANNEL_URLS[i] = url;
        }
    }

    private BidGenerator() {}

    /** Generate and return a random bid with next available id. */
    public static Bid nextBid(
            long eventId, SplittableRandom random, long timestamp, GeneratorConfig config) {

        long auction;
        // Here P(bid will be for a hot auction) = 1 - 1/hotAuctionRatio.
        if (random.nextInt(config.getHotAuctionRatio()) > 0) {
            // Choose the first auction in the batch of last HOT_AUCTION_RATIO auctions.
            auction =
                    (AuctionGenerator.lastBase0AuctionId(config, eventId) / HOT_AUCTION_RATIO)
                            * HOT_AUCTION_RATIO;
        } else {
            auction = AuctionGenerator.nextBase0AuctionId(eventId, random, config);
        }
        auction += GeneratorConfig.FIRST_AUCTION_ID;

        long bidder;
        // Here P(bid will be by a hot bidder) = 1 - 1/hotBiddersRatio
        if (random.nextInt(config.getHotBiddersRatio()) > 0) {
            // Choose the second person (so hot bidders and hot sellers don't collide) in the batch
            // of last HOT_BIDDER_RATIO people.
            bidder =
                    (PersonGenerator.lastBase0PersonId(config, eventId) / HOT_BIDDER_RATIO)
                                    * HOT_BIDDER_RATIO
                            + 1;
        } else {
            bidder = PersonGenerator.nextBase0PersonId(eventId, random, config);
        }
        bidder += GeneratorConfig.FIRST_PERSON_ID;

        long price = PriceGenerator.nextPrice(random);

        String channel;
        String url;
        if (random.nextInt(HOT_CHANNELS_RATIO) > 0) {
            int i = random.nextInt(HOT_CHANNELS.length);
            channel = HOT_CHANNELS[i];
            url = HOT_URLS[i];
        } else {
            int channelNumber = random.nextInt(CHANNELS_NUMBER);
            channel = CHANNEL_NAMES[channelNumber];
            url = CHANNEL_URLS[channelNumber];
        }

        bidder += GeneratorConfig.FIRST_PERSON_ID;

        int currentSize = 8 + 8 + 8 + 8;
        String extra = StringsGenerator.nextExtra(random, currentSize, config.getAvgBidByteSize());
        return new Bid(auction, bidder, price, channel, url, timestamp, extra);
    }

    private static String getBaseUrl(SplittableRandom random) {
        return "https://www.nexmark.com/"
                + nextString(random, 5, '_')
                + '/'
                + nextString(random, 5, '_')
                + '/'
                + nextString(random, 5, '_')
                + '/'
                + "item.htm?query=1";
    }
}
