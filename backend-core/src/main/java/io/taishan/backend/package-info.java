/**
 * The Taishan state backend for Flink: {@link io.taishan.backend.TaishanStateBackend}, its factory
 * and options, and the keyed backend that keeps keyed state in the Taishan KV service. Each path of
 * the keyed backend has a sub-package and one entry class: {@code state}, {@code write}, {@code
 * read}, {@code timers}, {@code iterator}, {@code snapshot}, {@code restore}, {@code remote}.
 */
package io.taishan.backend;
