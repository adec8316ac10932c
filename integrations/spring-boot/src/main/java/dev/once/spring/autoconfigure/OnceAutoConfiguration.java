package dev.once.spring.autoconfigure;

import dev.once.InProgressPolicy;
import dev.once.Once;
import dev.once.OnceListener;
import dev.once.micrometer.MicrometerOnceListener;
import dev.once.micrometer.ObservationOnceListener;
import dev.once.micrometer.OnceObservationConvention;
import dev.once.servlet.IdempotencyFilter;
import dev.once.servlet.TenantResolver;
import dev.once.spi.IdempotencyStore;
import dev.once.spring.IdempotencyFilterCustomizer;
import dev.once.spring.IdempotencyWebFilterCustomizer;
import dev.once.spring.IdempotentExceptionHandler;
import dev.once.spring.OnceBuilderCustomizer;
import dev.once.spring.OnceProperties;
import dev.once.spring.internal.IdempotentPostProcessor;
import dev.once.spring.internal.OnceBackgroundTasks;
import dev.once.spring.internal.OnceHealthIndicator;
import dev.once.spring.internal.StoreFactory;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.observation.ObservationRegistry;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.Filter;
import java.time.Duration;
import java.util.List;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Role;

/**
 * Auto-configuration for Once, from the {@code once.*} {@link OnceProperties}. Every bean backs off
 * when the application declares its own:
 *
 * <ul>
 *   <li>{@link IdempotencyStore}: over the context's DataSource (JDBC, dialect detected), else its
 *       Lettuce client (Redis, with once-redis), else the startup fails (once.store=memory asks
 *       for the in-memory store)
 *       ({@code once.store} forces one);
 *   <li>{@link Once}: the store with the properties, every {@link OnceListener} bean (Micrometer's
 *       included) and every {@link OnceBuilderCustomizer};
 *   <li>{@code @Idempotent} bean methods, through a post-processor;
 *   <li>in a servlet web application: the {@link IdempotencyFilter}, registered for every path
 *       ({@code once.http.*} choose what it protects); in a reactive one, with once-webflux, the
 *       non-blocking {@code IdempotencyWebFilter} from the same properties;
 *   <li>in a Spring MVC application: {@link IdempotentExceptionHandler}, answering Once's
 *       exceptions out of handlers as {@code application/problem+json};
 *   <li>with Actuator: the {@code once} health indicator; with once-micrometer and a
 *       {@link MeterRegistry}: Once's meters; with once-micrometer and an
 *       {@link ObservationRegistry}: an observation (a span, with tracing) per call;
 *   <li>maintenance (reap stale leases, purge expired records) every {@code once.maintenance.interval}.
 * </ul>
 */
@AutoConfiguration(afterName = {
    "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration",
    "org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration",
    "org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration",
    "org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration",
    "org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration",
    "org.springframework.boot.micrometer.metrics.autoconfigure.export.simple.SimpleMetricsExportAutoConfiguration",
    "org.springframework.boot.micrometer.observation.autoconfigure.ObservationAutoConfiguration"})
@ConditionalOnClass(Once.class)
@ConditionalOnBooleanProperty(name = "once.enabled", matchIfMissing = true)
@EnableConfigurationProperties(OnceProperties.class)
public class OnceAutoConfiguration {

  private static final org.apache.commons.logging.Log LOG =
      org.apache.commons.logging.LogFactory.getLog(OnceAutoConfiguration.class);

  /** The store the context calls for (see {@link StoreFactory}). */
  @Bean
  @ConditionalOnMissingBean
  public IdempotencyStore onceStore(OnceProperties properties, ListableBeanFactory beans) {
    return StoreFactory.create(properties, beans);
  }

  /** The thread heartbeats and maintenance run on. */
  @Bean
  @ConditionalOnMissingBean
  public OnceBackgroundTasks onceBackgroundTasks() {
    return new OnceBackgroundTasks();
  }

  /** The {@link Once} every integration uses. */
  @Bean
  @ConditionalOnMissingBean
  public Once once(IdempotencyStore store, OnceProperties properties,
      ObjectProvider<OnceListener> listeners, ObjectProvider<OnceBuilderCustomizer> customizers,
      OnceBackgroundTasks background) {
    Once.Builder builder = Once.builder(store)
        .lease(properties.getLease())
        .retention(properties.getRetention())
        .maxPayloadBytes(Math.toIntExact(properties.getMaxPayload().toBytes()));
    Duration wait = properties.getInProgressWait();
    if (wait != null && !wait.isZero()) {
      builder.onInProgress(InProgressPolicy.waitUpTo(wait));
    }
    // Once tells each listener apart and drops what it throws, an Error included.
    List<OnceListener> all = listeners.orderedStream().toList();
    if (!all.isEmpty()) {
      builder.listener(OnceListener.compose(all.toArray(OnceListener[]::new)));
    }
    if (properties.isHeartbeat()) {
      builder.heartbeat(background.scheduler());
    }
    customizers.orderedStream().forEach(customizer -> customizer.customize(builder));
    Once once = builder.build();
    Once.Config c = once.config();
    LOG.info("Once: store " + c.store() + ", lease " + c.lease() + ", retention "
        + c.retention() + ", heartbeat " + (c.heartbeat() != null ? "on" : "off")
        + coalescing(c));
    return once;
  }

  /** How store calls coalesce, for the start-up line: given, or as the store suggests. */
  private static String coalescing(Once.Config c) {
    int callsAlone = c.coalescedCallsInFlight();
    if (callsAlone < 0) {
      try {
        callsAlone = c.store().defaultCoalescing();
      } catch (RuntimeException | LinkageError e) {
        callsAlone = 0; // as Once takes it: none
      }
      if (callsAlone == -1) {
        return ", store calls coalesced as the store suggests once it knows its database";
      }
    }
    return callsAlone > 0 ? ", store calls coalesced beyond " + callsAlone + " callers" : "";
  }

  /** Starts maintenance once every singleton exists. */
  @Bean
  @ConditionalOnBooleanProperty(name = "once.maintenance.enabled", matchIfMissing = true)
  public SmartInitializingSingleton onceMaintenance(ObjectProvider<Once> once,
      OnceBackgroundTasks background, OnceProperties properties) {
    return () -> once.ifUnique(
        o -> background.scheduleMaintenance(o, properties.getMaintenance().getInterval()));
  }

  /** Proxies beans with {@code @Idempotent} methods. */
  @Bean
  @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
  @ConditionalOnMissingBean
  public static IdempotentPostProcessor onceIdempotentPostProcessor() {
    return new IdempotentPostProcessor();
  }

  /** The {@code Idempotency-Key} filter, in a servlet web application. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
  @ConditionalOnClass({Filter.class, IdempotencyFilter.class, FilterRegistrationBean.class})
  @ConditionalOnBooleanProperty(name = "once.http.enabled", matchIfMissing = true)
  public static class HttpConfiguration {

    /** The filter, from {@code once.http.*}, a {@link TenantResolver} bean and the customizers. */
    @Bean
    @ConditionalOnMissingBean
    public IdempotencyFilter onceIdempotencyFilter(Once once, OnceProperties properties,
        ObjectProvider<TenantResolver> tenantResolver,
        ObjectProvider<IdempotencyFilterCustomizer> customizers) {
      OnceProperties.Http http = properties.getHttp();
      IdempotencyFilter.Builder builder = IdempotencyFilter.builder(once)
          .methods(http.getMethods())
          .paths(http.getPaths())
          .excludePaths(http.getExcludePaths())
          .scope(http.getScope())
          .keyHeader(http.getKeyHeader())
          .keyRequired(http.isKeyRequired())
          .storeServerErrors(http.isStoreServerErrors())
          .maxRequestBytes(Math.toIntExact(http.getMaxRequestBytes().toBytes()))
          .replayHeaders(http.getReplayHeaders())
          .neverStoreHeaders(http.getNeverStoreHeaders())
          .retryAfter(http.getRetryAfter());
      if (http.getMaxResponseBytes() != null) {
        builder.maxResponseBytes(Math.toIntExact(http.getMaxResponseBytes().toBytes()));
      }
      TenantResolver resolver = tenantResolver.getIfUnique(() -> tenantResolver(http));
      if (resolver != null) {
        builder.tenantResolver(resolver);
      }
      customizers.orderedStream().forEach(customizer -> customizer.customize(builder));
      IdempotencyFilter filter = builder.build();
      LOG.info("Once: the Idempotency-Key filter protects " + http.getMethods() + " on "
          + (http.getPaths().isEmpty() ? "every path" : http.getPaths())
          + (http.getExcludePaths().isEmpty() ? "" : ", except " + http.getExcludePaths())
          + " (header " + http.getKeyHeader() + ", " + (http.isKeyRequired() ? "required"
              : "optional") + ")");
      return filter;
    }

    /**
     * In a Spring MVC application with observations: gives the requests the filter answers itself
     * their route in {@code http.server.requests}, just outside the filter.
     */
    @Bean
    @ConditionalOnClass(name = {"org.springframework.web.servlet.HandlerMapping",
        "io.micrometer.observation.ObservationRegistry"})
    @ConditionalOnMissingBean(name = "onceRouteTagFilterRegistration")
    public FilterRegistrationBean<dev.once.spring.internal.RouteTagFilter>
        onceRouteTagFilterRegistration(
            ObjectProvider<org.springframework.web.servlet.HandlerMapping> mappings,
            OnceProperties properties) {
      FilterRegistrationBean<dev.once.spring.internal.RouteTagFilter> registration =
          new FilterRegistrationBean<>(new dev.once.spring.internal.RouteTagFilter(mappings));
      registration.setName("onceRouteTagFilter");
      registration.addUrlPatterns("/*");
      registration.setDispatcherTypes(DispatcherType.REQUEST);
      registration.setOrder(properties.getHttp().getFilterOrder() - 1);
      return registration;
    }

    /** Registers the filter for REQUEST dispatches to every path, at {@code once.http.filter-order}. */
    @Bean
    @ConditionalOnMissingBean(name = "onceIdempotencyFilterRegistration")
    public FilterRegistrationBean<IdempotencyFilter> onceIdempotencyFilterRegistration(
        IdempotencyFilter filter, OnceProperties properties) {
      FilterRegistrationBean<IdempotencyFilter> registration = new FilterRegistrationBean<>(filter);
      registration.setName("onceIdempotencyFilter");
      registration.addUrlPatterns("/*");
      registration.setDispatcherTypes(DispatcherType.REQUEST);
      registration.setOrder(properties.getHttp().getFilterOrder());
      return registration;
    }

    private static TenantResolver tenantResolver(OnceProperties.Http http) {
      boolean header = http.getTenantHeader() != null && !http.getTenantHeader().isBlank();
      if (header && http.isTenantPrincipal()) {
        throw new IllegalStateException("set once.http.tenant-header or"
            + " once.http.tenant-principal, not both");
      }
      if (header) {
        return TenantResolver.header(http.getTenantHeader());
      }
      return http.isTenantPrincipal() ? TenantResolver.principal() : null;
    }
  }

  /**
   * The {@code Idempotency-Key} filter, in a reactive web application: the
   * {@link dev.once.webflux.IdempotencyWebFilter} from the same {@code once.http.*} properties as
   * the servlet filter, at {@code once.http.filter-order} among the {@code WebFilter}s.
   */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.REACTIVE)
  @ConditionalOnClass(name = {"dev.once.webflux.IdempotencyWebFilter",
      "org.springframework.web.server.WebFilter"})
  @ConditionalOnBooleanProperty(name = "once.http.enabled", matchIfMissing = true)
  public static class ReactiveHttpConfiguration {

    /**
     * The filter, from {@code once.http.*}, a {@link dev.once.webflux.TenantResolver} bean and
     * the {@link IdempotencyWebFilterCustomizer}s; backs off when the application declares an
     * {@link dev.once.webflux.IdempotencyWebFilter} of its own.
     */
    @Bean
    @ConditionalOnMissingBean(value = dev.once.webflux.IdempotencyWebFilter.class,
        name = "onceIdempotencyWebFilter")
    public dev.once.spring.internal.OrderedWebFilter onceIdempotencyWebFilter(Once once,
        OnceProperties properties,
        ObjectProvider<dev.once.webflux.TenantResolver> tenantResolver,
        ObjectProvider<IdempotencyWebFilterCustomizer> customizers) {
      OnceProperties.Http http = properties.getHttp();
      dev.once.webflux.IdempotencyWebFilter.Builder builder =
          dev.once.webflux.IdempotencyWebFilter.builder(once)
              .methods(http.getMethods())
              .paths(http.getPaths())
              .excludePaths(http.getExcludePaths())
              .scope(http.getScope())
              .keyHeader(http.getKeyHeader())
              .keyRequired(http.isKeyRequired())
              .storeServerErrors(http.isStoreServerErrors())
              .maxRequestBytes(Math.toIntExact(http.getMaxRequestBytes().toBytes()))
              .replayHeaders(http.getReplayHeaders())
              .neverStoreHeaders(http.getNeverStoreHeaders())
              .retryAfter(http.getRetryAfter());
      if (http.getMaxResponseBytes() != null) {
        builder.maxResponseBytes(Math.toIntExact(http.getMaxResponseBytes().toBytes()));
      }
      dev.once.webflux.TenantResolver resolver =
          tenantResolver.getIfUnique(() -> tenantResolver(http));
      if (resolver != null) {
        builder.tenantResolver(resolver);
      }
      customizers.orderedStream().forEach(customizer -> customizer.customize(builder));
      dev.once.webflux.IdempotencyWebFilter filter = builder.build();
      LOG.info("Once: the Idempotency-Key WebFilter protects " + http.getMethods() + " on "
          + (http.getPaths().isEmpty() ? "every path" : http.getPaths())
          + (http.getExcludePaths().isEmpty() ? "" : ", except " + http.getExcludePaths())
          + " (header " + http.getKeyHeader() + ", " + (http.isKeyRequired() ? "required"
              : "optional") + "); store calls run on the Once's asyncExecutor");
      return new dev.once.spring.internal.OrderedWebFilter(filter, http.getFilterOrder());
    }

    private static dev.once.webflux.TenantResolver tenantResolver(OnceProperties.Http http) {
      boolean header = http.getTenantHeader() != null && !http.getTenantHeader().isBlank();
      if (header && http.isTenantPrincipal()) {
        throw new IllegalStateException("set once.http.tenant-header or"
            + " once.http.tenant-principal, not both");
      }
      if (header) {
        return dev.once.webflux.TenantResolver.header(http.getTenantHeader());
      }
      return http.isTenantPrincipal() ? dev.once.webflux.TenantResolver.principal() : null;
    }
  }

  /** Once's exceptions out of Spring MVC handlers as problem+json. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
  @ConditionalOnClass(name = {"org.springframework.web.servlet.DispatcherServlet",
      "org.springframework.http.ProblemDetail", "dev.once.servlet.IdempotencyFilter"})
  @ConditionalOnBooleanProperty(name = "once.http.problem-details", matchIfMissing = true)
  public static class ProblemDetailsConfiguration {

    /** 422, 409 with Retry-After, 503, ... with the filter's problem types. */
    @Bean
    @ConditionalOnMissingBean
    public IdempotentExceptionHandler onceIdempotentExceptionHandler(OnceProperties properties) {
      return new IdempotentExceptionHandler(properties.getHttp().getRetryAfter(),
          properties.getHttp().getKeyHeader());
    }
  }

  /** The {@code once} health indicator, with Actuator. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(HealthIndicator.class)
  @ConditionalOnEnabledHealthIndicator("once")
  public static class HealthConfiguration {

    /** One cheap read from the store per check. */
    @Bean
    @ConditionalOnMissingBean(name = "onceHealthIndicator")
    public HealthIndicator onceHealthIndicator(IdempotencyStore store) {
      return new OnceHealthIndicator(store);
    }
  }

  /** Once's meters, with once-micrometer and a {@link MeterRegistry}. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass({MeterRegistry.class, MicrometerOnceListener.class})
  @ConditionalOnBean(MeterRegistry.class)
  @ConditionalOnBooleanProperty(name = "once.metrics.enabled", matchIfMissing = true)
  public static class MetricsConfiguration {

    /** A listener recording into the registry, tagged with the store's kind. */
    @Bean
    @ConditionalOnMissingBean
    public MicrometerOnceListener onceMetricsListener(MeterRegistry registry,
        IdempotencyStore store, OnceProperties properties) {
      return MicrometerOnceListener.builder(registry)
          .store(store)
          .scopeTag(properties.getMetrics().isScopeTag())
          .build();
    }
  }

  /**
   * An observation per call (spans, with Micrometer Tracing), with once-micrometer and an
   * {@link ObservationRegistry}: composed with the metrics listener into the {@link Once} bean.
   */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass({ObservationRegistry.class, ObservationOnceListener.class})
  @ConditionalOnBean(ObservationRegistry.class)
  @ConditionalOnBooleanProperty(name = "once.observations.enabled", matchIfMissing = true)
  public static class ObservationConfiguration {

    /** A listener observing into the registry, tagged with the store's kind. */
    @Bean
    @ConditionalOnMissingBean
    public ObservationOnceListener onceObservationListener(ObservationRegistry registry,
        IdempotencyStore store, OnceProperties properties,
        ObjectProvider<OnceObservationConvention> convention) {
      ObservationOnceListener.Builder builder = ObservationOnceListener.builder(registry)
          .store(store)
          .scopeTag(properties.getMetrics().isScopeTag());
      convention.ifUnique(builder::convention);
      return builder.build();
    }
  }
}
