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

import io.taishan.benchmarks.nexmark.generator.model.Auction;
import io.taishan.benchmarks.nexmark.generator.model.AuctionGenerator;
import io.taishan.benchmarks.nexmark.generator.model.Bid;
import io.taishan.benchmarks.nexmark.generator.model.BidGenerator;
import io.taishan.benchmarks.nexmark.generator.model.Person;
import io.taishan.benchmarks.nexmark.generator.model.PersonGenerator;
import java.io.Serializable;
import java.util.SplittableRandom;

/**
 * A generator for synthetic events. We try to make the data vaguely reasonable. We also ensure most
 * primary key/foreign key relations are correct. Eg: a {@link Bid} event will usually have valid
 * auction and bidder ids which can be joined to already-generated Auction and Person events.
 *
 * <p>Ported from nexmark/nexmark's {@code com.github.nexmark.flink.generator.NexmarkGenerator}. The
 * upstream generator is an iterator drawing every field from one unseeded {@code SplittableRandom},
 * so two runs never see the same events; here {@link #event(long)} makes the event at any index on
 * its own, from a random seeded by the configured seed and the event id (as Apache Beam's Nexmark
 * seeds a {@code Random} with the event id), so that any source subtask can make any event and the
 * run's events are the same on every backend.
 */
public final class NexmarkGenerator implements Serializable {
    private static final long serialVersionUID = 1L;

    /** The golden-ratio increment of SplittableRandom: spreads nearby ids over the seed space. */
    private static final long SEED_MIX = 0x9E3779B97F4A7C15L;

    private final GeneratorConfig config;

    public NexmarkGenerator(GeneratorConfig config) {
        this.config = config;
    }

    public GeneratorConfig config() {
        return config;
    }

    /**
     * The event at {@code index} (0-based) of the run: a {@link Person}, an {@link Auction} or a
     * {@link Bid}.
     */
    public Object event(long index) {
        long eventNumber = config.eventNumber(index);
        // Timestamps follow the event number; no out-of-order groups, so no jitter.
        long timestamp = config.timestampForEvent(eventNumber);
        long eventId = config.eventId(eventNumber);
        SplittableRandom random = new SplittableRandom(config.seed * SEED_MIX + eventId);
        long rem = eventId % config.totalProportion;
        if (rem < config.personProportion) {
            return PersonGenerator.nextPerson(eventId, random, timestamp, config);
        } else if (rem < config.personProportion + config.auctionProportion) {
            return AuctionGenerator.nextAuction(index, eventId, random, timestamp, config);
        } else {
            return BidGenerator.nextBid(eventId, random, timestamp, config);
        }
    }
}
