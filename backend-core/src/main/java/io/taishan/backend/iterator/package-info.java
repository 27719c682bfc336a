/** Iteration over the keys and namespaces of registered states. */
package io.taishan.backend.iterator;
