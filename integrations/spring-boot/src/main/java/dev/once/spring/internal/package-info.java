/** Implementation of the Spring Boot starter; not API. */
package dev.once.spring.internal;
