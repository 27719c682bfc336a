package io.taishan.demo;

/** A step of the demo did not go as the story says: the demo ends with this message, exit 1. */
final class DemoFailure extends RuntimeException {
    private static final long serialVersionUID = 1L;

    DemoFailure(String message) {
        super(message);
    }
}
