/**
 * The Taishan state backend for Flink: {@link io.taishan.backend.TaishanStateBackend}, its factory
 * and options, and the keyed backend that keeps keyed state in the Taishan KV service.
 */
package io.taishan.backend;
