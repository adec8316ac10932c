package dev.once.spring.internal;

import org.springframework.http.HttpEntity;

/** spring-web's types, loaded only where a method is known to use them (spring-web is optional). */
final class HttpEntityTypes {

  static final Class<?> HTTP_ENTITY = HttpEntity.class;

  private HttpEntityTypes() {}
}
