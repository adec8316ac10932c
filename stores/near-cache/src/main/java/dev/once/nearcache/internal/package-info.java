/** The near cache's implementation. Not API: anything here may change in any release. */
package dev.once.nearcache.internal;
