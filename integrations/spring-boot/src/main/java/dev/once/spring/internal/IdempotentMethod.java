package dev.once.spring.internal;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.once.Codec;
import dev.once.Codecs;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.InvalidKeyException;
import dev.once.jackson.CanonicalJson;
import dev.once.spring.Idempotent;
import dev.once.spring.IdempotencyKeyMissingException;
import java.lang.reflect.Method;
import org.springframework.core.KotlinDetector;
import org.springframework.core.ReactiveAdapterRegistry;
import org.springframework.core.ResolvableType;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.util.Map;
import java.util.Optional;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.context.expression.BeanFactoryResolver;
import org.springframework.context.expression.MethodBasedEvaluationContext;
import org.springframework.core.DefaultParameterNameDiscoverer;
import org.springframework.core.ParameterNameDiscoverer;
import org.springframework.expression.EvaluationException;
import org.springframework.expression.Expression;
import org.springframework.expression.ParseException;
import org.springframework.expression.spel.standard.SpelExpressionParser;

/**
 * One {@link Idempotent} method, its annotation read and its expressions parsed once: how to make
 * the key and the fingerprint of a call, and how to store its return value.
 */
final class IdempotentMethod {

  private static final SpelExpressionParser PARSER = new SpelExpressionParser();
  private static final ParameterNameDiscoverer NAMES = new DefaultParameterNameDiscoverer();

  /** What SpEL sees as {@code #root}: {@code #root.method}, {@code #root.args}, {@code #root.target}. */
  record Root(Method method, Object[] args, Object target) {}

  private final Method method;
  private final String scope;
  private final Expression key;
  private final Expression tenant;
  private final Expression fingerprint;
  private final Class<? extends Throwable>[] terminalOn;
  /** The type of the value stored: the return type, or {@code T} of a {@code Mono<T>}. */
  private final Type returnType;
  /** The raw class of {@link #returnType}. */
  private final Class<?> valueClass;
  /** Whether the method returns a {@code Mono<T>}, run through once-reactor. */
  private final boolean reactive;
  /** For an {@code HttpEntity}/{@code ResponseEntity} value, its resolved body type. */
  private final Type entityBody;

  private IdempotentMethod(Method method, Idempotent annotation, Class<?> targetClass,
      boolean reactiveSupported) {
    this.method = method;
    String name = describe(method, targetClass);
    this.scope = annotation.scope().isEmpty()
        ? targetClass.getSimpleName() + "." + method.getName()
        : annotation.scope();
    try {
      IdempotencyKey.of(scope, "probe");
    } catch (InvalidKeyException e) {
      throw new IllegalStateException("@Idempotent on " + name + ": invalid scope '" + scope
          + "' (" + e.getMessage() + "); set @Idempotent(scope = ...)", e);
    }
    this.key = parse(annotation.key(), "key", name);
    this.tenant = annotation.tenant().isEmpty() ? null : parse(annotation.tenant(), "tenant", name);
    this.fingerprint = annotation.fingerprint().isEmpty() ? null
        : parse(annotation.fingerprint(), "fingerprint", name);
    this.terminalOn = annotation.terminalOn();
    ResolvableType resolved = ResolvableType.forMethodReturnType(method, targetClass);
    this.reactive = reactiveSupported && isMono(resolved.resolve(Object.class));
    ResolvableType value = reactive ? resolved.getGeneric(0) : resolved;
    String refused = reactive ? monoRefusal(method, resolved) : refusal(method, resolved);
    if (refused != null) {
      throw new IllegalStateException("@Idempotent on " + name + ": " + refused);
    }
    this.returnType = value.getType();
    this.valueClass = reactive ? value.resolve(Object.class) : method.getReturnType();
    this.entityBody = isA(value.resolve(Object.class), "org.springframework.http.HttpEntity")
        ? resolvedType(value.as(HttpEntityTypes.HTTP_ENTITY).getGeneric(0)) : null;
  }

  /**
   * {@code type} as a {@link Type} with its variables resolved: {@code getType()} of a generic
   * reached through {@code as(...)} is the declaring class's variable ({@code T} of
   * {@code HttpEntity<T>}), which Jackson would read as {@code Object}.
   */
  static Type resolvedType(ResolvableType type) {
    Class<?> raw = type.resolve(Object.class);
    if (!type.hasGenerics()) {
      return raw;
    }
    ResolvableType[] generics = type.getGenerics();
    Type[] arguments = new Type[generics.length];
    for (int i = 0; i < generics.length; i++) {
      arguments[i] = resolvedType(generics[i]);
    }
    Type owner = raw.getDeclaringClass();
    return new ParameterizedType() {
      @Override
      public Type[] getActualTypeArguments() {
        return arguments.clone();
      }

      @Override
      public Type getRawType() {
        return raw;
      }

      @Override
      public Type getOwnerType() {
        return owner;
      }

      @Override
      public String toString() {
        return raw.getName() + java.util.Arrays.toString(arguments);
      }
    };
  }

  private static final String MONO = "reactor.core.publisher.Mono";

  /** Whether {@code raw} is Reactor's {@code Mono} itself. */
  private static boolean isMono(Class<?> raw) {
    return raw.getName().equals(MONO);
  }

  /**
   * Why a method returning {@code Mono<T>} (run through once-reactor) cannot be @Idempotent, or
   * null when it can: {@code T} must be known and storable, by the rules of a blocking method.
   */
  private static String monoRefusal(Method method, ResolvableType mono) {
    ResolvableType element = mono.getGeneric(0);
    Class<?> elementClass = element.resolve();
    if (elementClass == null || elementClass == Object.class && element.getType()
        instanceof java.lang.reflect.WildcardType) {
      return "the element type of " + mono + " is not known, so its replay could not be read back"
          + " as the same type: declare it (Mono<Receipt>, Mono<Void>, not Mono<?>)";
    }
    String refused = refusal(method, element);
    return refused == null ? null : "its element type: " + refused;
  }

  private static final String ASYNC = "asynchronous return types (%s) are not supported: the"
      + " method must return its result";
  private static final String REACTIVE = "reactive return types (%s) are not supported: return"
      + " a Mono<T> (with dev.once:once-reactor on the classpath), or the value itself, or put"
      + " @Idempotent on a blocking service method the reactive code calls";
  private static final String STREAMED = "streamed responses (%s) cannot be stored and replayed:"
      + " return the whole body, or leave this endpoint to the Idempotency-Key filter's path"
      + " exclusions";

  /**
   * Return types whose result cannot be stored whole when the method returns, and so would be run
   * again or answered wrongly on a retry: refused at startup, with what to do instead. Those that
   * are web types are refused on any method; {@code Callable} only on a request handler, where
   * Spring MVC runs it later (a domain class may well implement it).
   */
  private static final Map<String, String> REFUSED = Map.of(
      "java.util.concurrent.CompletionStage", ASYNC,
      "java.util.concurrent.Future", ASYNC,
      "org.reactivestreams.Publisher", REACTIVE,
      "java.util.concurrent.Flow$Publisher", REACTIVE,
      "org.springframework.web.context.request.async.DeferredResult", ASYNC,
      "org.springframework.web.context.request.async.WebAsyncTask", ASYNC,
      "org.springframework.web.servlet.mvc.method.annotation.ResponseBodyEmitter", STREAMED,
      "org.springframework.web.servlet.mvc.method.annotation.StreamingResponseBody", STREAMED,
      "org.springframework.core.io.Resource", STREAMED);

  /** Why {@code method}, returning {@code type}, cannot be @Idempotent, or null when it can. */
  static String refusal(Method method, ResolvableType type) {
    Class<?> raw = type.resolve(Object.class);
    if (KotlinDetector.isSuspendingFunction(method)) {
      return String.format(REACTIVE, "a Kotlin suspend function");
    }
    String refused = refusal(raw);
    if (refused != null) {
      return refused;
    }
    if (isA(raw, "java.util.concurrent.Callable") && isRequestHandler(method)) {
      return String.format(ASYNC, raw.getName());
    }
    if (isA(raw, "org.springframework.http.HttpEntity")) {
      if (!raw.getName().equals("org.springframework.http.HttpEntity")
          && !raw.getName().equals("org.springframework.http.ResponseEntity")) {
        return raw.getName() + " cannot be replayed as itself: declare the method to return"
            + " ResponseEntity<T> (or HttpEntity<T>)";
      }
      ResolvableType body = type.as(HttpEntityTypes.HTTP_ENTITY).getGeneric(0);
      Class<?> bodyClass = body.resolve();
      if (bodyClass == null || bodyClass == Object.class) {
        return "the body type of " + type + " is not known, so its replay could not be read"
            + " back as the same type: declare it (ResponseEntity<Receipt>, not ResponseEntity<?>)";
      }
      if (bodyClass == byte[].class) {
        return "a byte[] body cannot be replayed byte for byte from its JSON: return the"
            + " response through the Idempotency-Key filter instead";
      }
      String bodyRefused = refusal(bodyClass);
      if (bodyRefused != null) {
        return "its body: " + bodyRefused;
      }
    }
    return null;
  }

  /** Why a value of {@code raw} cannot be stored, or null when it can. */
  private static String refusal(Class<?> raw) {
    for (Map.Entry<String, String> r : REFUSED.entrySet()) {
      if (isA(raw, r.getKey())) {
        return String.format(r.getValue(), raw.getName());
      }
    }
    if (ReactiveAdapterRegistry.getSharedInstance().getAdapter(raw) != null) {
      return String.format(REACTIVE, raw.getName()); // RxJava, Kotlin Flow, Mutiny...
    }
    return null;
  }

  /** Whether Spring MVC calls {@code method} for requests (it has a request mapping). */
  private static boolean isRequestHandler(Method method) {
    for (var annotation : org.springframework.core.annotation.MergedAnnotations.from(method,
        org.springframework.core.annotation.MergedAnnotations.SearchStrategy.TYPE_HIERARCHY)) {
      if (annotation.getType().getName()
          .equals("org.springframework.web.bind.annotation.RequestMapping")) {
        return true;
      }
    }
    return false;
  }

  /** Whether {@code type} is, extends or implements the type named {@code name}. */
  private static boolean isA(Class<?> type, String name) {
    if (type == null || type.isPrimitive()) {
      return false;
    }
    if (type.getName().equals(name)) {
      return true;
    }
    for (Class<?> i : type.getInterfaces()) {
      if (isA(i, name)) {
        return true;
      }
    }
    return isA(type.getSuperclass(), name);
  }

  /** The method's metadata, or null if it is not {@link Idempotent}. */
  static IdempotentMethod of(Method method, Class<?> targetClass, boolean reactiveSupported) {
    Idempotent annotation = org.springframework.core.annotation.AnnotatedElementUtils
        .findMergedAnnotation(method, Idempotent.class);
    return annotation == null ? null
        : new IdempotentMethod(method, annotation, targetClass, reactiveSupported);
  }

  /** Whether it returns a {@code Mono<T>}, to run through once-reactor. */
  boolean reactive() {
    return reactive;
  }

  /** The method itself. */
  Method method() {
    return method;
  }

  String scope() {
    return scope;
  }

  /** Whether it returns an {@code HttpEntity} or {@code ResponseEntity}. */
  boolean returnsEntity() {
    return entityBody != null;
  }

  Class<? extends Throwable>[] terminalOn() {
    return terminalOn;
  }

  /** The key of a call with {@code args}. */
  IdempotencyKey key(Object target, Object[] args, BeanFactory beans) {
    MethodBasedEvaluationContext context = context(target, args, beans);
    Object keyValue = unwrap(evaluate(key, context, "key"));
    if (keyValue == null || keyValue.toString().isBlank()) {
      throw new IdempotencyKeyMissingException("@Idempotent key '" + key.getExpressionString() + "' of "
          + scope + " evaluated to " + (keyValue == null ? "null" : "a blank string"));
    }
    String tenantValue = "";
    if (tenant != null) {
      Object value = unwrap(evaluate(tenant, context, "tenant"));
      if (value == null) {
        throw new InvalidKeyException("@Idempotent tenant '" + tenant.getExpressionString()
            + "' of " + scope + " evaluated to null");
      }
      tenantValue = value.toString();
    }
    return IdempotencyKey.of(scope, tenantValue, keyValue.toString());
  }

  /** An {@code Optional} key or tenant (a header read as one) is its value, or none. */
  private static Object unwrap(Object value) {
    return value instanceof Optional<?> optional ? optional.orElse(null) : value;
  }

  /**
   * The fingerprint of a call: the canonical JSON of the fingerprint expression's value (all
   * arguments by default), or the bytes of a {@code byte[]} value.
   */
  Fingerprint fingerprint(Object target, Object[] args, BeanFactory beans, ObjectMapper mapper) {
    Object value = fingerprint == null ? args
        : evaluate(fingerprint, context(target, args, beans), "fingerprint");
    if (value instanceof byte[] bytes) {
      return Fingerprint.of(bytes);
    }
    try {
      return CanonicalJson.fingerprint(mapper.writeValueAsBytes(value));
    } catch (JsonProcessingException | IllegalArgumentException e) {
      throw new IllegalArgumentException("@Idempotent on " + scope + ": cannot write "
          + (fingerprint == null ? "the arguments" : "the fingerprint value") + " as JSON to"
          + " fingerprint them (" + e.getMessage() + "); set @Idempotent(fingerprint = ...) to"
          + " what identifies the request", e);
    }
  }

  /**
   * How the return value (a {@code Mono}'s value) is stored: nothing for void ({@code Mono<Void>}),
   * else JSON of the declared type.
   */
  Codec<Object> codec(ObjectMapper mapper) {
    Class<?> raw = valueClass;
    if (raw == void.class || raw == Void.class) {
      @SuppressWarnings("unchecked")
      Codec<Object> none = (Codec<Object>) (Codec<?>) Codecs.none();
      return none;
    }
    if (entityBody != null) {
      return HttpEntityCodec.of(mapper, entityBody);
    }
    if (raw == Optional.class) {
      Type element = returnType instanceof ParameterizedType p
          ? p.getActualTypeArguments()[0] : Object.class;
      return new OptionalCodec(JsonCodecs.of(mapper, element));
    }
    return JsonCodecs.of(mapper, returnType);
  }

  private MethodBasedEvaluationContext context(Object target, Object[] args, BeanFactory beans) {
    MethodBasedEvaluationContext context =
        new MethodBasedEvaluationContext(new Root(method, args, target), method, args, NAMES);
    if (beans != null) {
      context.setBeanResolver(new BeanFactoryResolver(beans));
    }
    return context;
  }

  private Object evaluate(Expression expression, MethodBasedEvaluationContext context,
      String what) {
    try {
      return expression.getValue(context);
    } catch (EvaluationException e) {
      throw new IllegalArgumentException("@Idempotent " + what + " '"
          + expression.getExpressionString() + "' of " + scope + " failed: " + e.getMessage(), e);
    }
  }

  private static Expression parse(String text, String what, String method) {
    if (text.isBlank()) {
      throw new IllegalStateException("@Idempotent on " + method + ": " + what
          + " must be a SpEL expression, e.g. \"#request.id\"");
    }
    try {
      return PARSER.parseExpression(text);
    } catch (ParseException e) {
      throw new IllegalStateException("@Idempotent on " + method + ": " + what + " '" + text
          + "' is not a valid SpEL expression: " + e.getMessage(), e);
    }
  }

  static String describe(Method method, Class<?> targetClass) {
    return targetClass.getName() + "." + method.getName();
  }
}
