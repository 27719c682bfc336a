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
package io.taishan.benchmarks.nexmark.generator;

import java.io.Serializable;

/**
 * Parameters controlling how {@link NexmarkGenerator} synthesizes events.
 *
 * <p>Ported from nexmark/nexmark's {@code com.github.nexmark.flink.generator.GeneratorConfig}
 * (itself from Apache Beam's Nexmark), with one timeline for all events instead of one per
 * generator: event {@code i} of the run has event number {@code i + 1} and event id {@code i + 2}
 * whatever the parallelism, so the event sequence depends only on the seed, the event count and
 * these parameters. The split into per-generator timelines, rate shapes, out-of-order groups and
 * the wall-clock pacing are left out: the benchmark emits as fast as the job takes events.
 */
public final class GeneratorConfig implements Serializable {
    private static final long serialVersionUID = 1L;

    /**
     * We start the ids at specific values to help ensure the queries find a match even on small
     * synthesized dataset sizes.
     */
    public static final long FIRST_AUCTION_ID = 1000L;

    public static final long FIRST_PERSON_ID = 1000L;
    public static final long FIRST_CATEGORY_ID = 10L;

    /** As nexmark-flink's table source sets them. */
    private static final long FIRST_EVENT_ID = 1;

    private static final long FIRST_EVENT_NUMBER = 1;

    /** Proportions of people/auctions/bids to synthesize. */
    public final int personProportion;

    public final int auctionProportion;
    public final int bidProportion;
    public final int totalProportion;

    /** Delay between events, in microseconds of event time. */
    private final double interEventDelayUs;

    /** Time for first event (ms since epoch). */
    public final long baseTime;

    /** Number of events to generate. */
    public final long maxEvents;

    /** Mixed into every event's random seed (upstream draws from an unseeded random). */
    public final long seed;

    // NexmarkConfiguration's defaults.
    private final int avgPersonByteSize = 200;
    private final int avgAuctionByteSize = 500;
    private final int avgBidByteSize = 100;
    private final int hotAuctionRatio = 2;
    private final int hotSellersRatio = 4;
    private final int hotBiddersRatio = 4;
    private final int numInFlightAuctions = 100;
    private final int numActivePeople = 1000;

    /**
     * @param eventsPerSecond events per second of event time (nexmark's {@code first-event.rate})
     */
    public GeneratorConfig(
            long maxEvents,
            double eventsPerSecond,
            long baseTime,
            long seed,
            int personProportion,
            int auctionProportion,
            int bidProportion) {
        if (maxEvents <= 0 || eventsPerSecond <= 0) {
            throw new IllegalArgumentException("events and rate must be positive");
        }
        this.maxEvents = maxEvents;
        this.interEventDelayUs = 1_000_000.0 / eventsPerSecond;
        this.baseTime = baseTime;
        this.seed = seed;
        this.personProportion = personProportion;
        this.auctionProportion = auctionProportion;
        this.bidProportion = bidProportion;
        this.totalProportion = personProportion + auctionProportion + bidProportion;
    }

    public int getAvgPersonByteSize() {
        return avgPersonByteSize;
    }

    public int getNumActivePeople() {
        return numActivePeople;
    }

    public int getHotSellersRatio() {
        return hotSellersRatio;
    }

    public int getNumInFlightAuctions() {
        return numInFlightAuctions;
    }

    public int getHotAuctionRatio() {
        return hotAuctionRatio;
    }

    public int getHotBiddersRatio() {
        return hotBiddersRatio;
    }

    public int getAvgBidByteSize() {
        return avgBidByteSize;
    }

    public int getAvgAuctionByteSize() {
        return avgAuctionByteSize;
    }

    /** The event number of the event at {@code index} (0-based) of the run. */
    public long eventNumber(long index) {
        return FIRST_EVENT_NUMBER + index;
    }

    /** The id of the event with {@code eventNumber}: the seed of its fields. */
    public long eventId(long eventNumber) {
        return FIRST_EVENT_ID + eventNumber;
    }

    /** What timestamp should the event with {@code eventNumber} have? */
    public long timestampForEvent(long eventNumber) {
        return baseTime + (long) (eventNumber * interEventDelayUs) / 1000L;
    }
}
