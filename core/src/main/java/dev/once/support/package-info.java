/**
 * What the builders and adapters of every module of this project share so that they behave alike:
 * argument checks that refuse a bad setting with the same words ({@link dev.once.support.Checks}),
 * and a log for a failure that repeats ({@link dev.once.support.RepeatedFailureLog}). Neither an
 * application nor a store author needs it. It depends on the JDK only, so the API, the SPI, the
 * engine and every module can use it without a package cycle.
 */
package dev.once.support;
