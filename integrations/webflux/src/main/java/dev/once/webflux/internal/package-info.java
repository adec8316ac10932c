/** Implementation of {@code once-webflux}; not API. */
package dev.once.webflux.internal;
