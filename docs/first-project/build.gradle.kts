// A first Spring Boot service with Once on PostgreSQL. Checked by the build (tools/architecture
// FirstProjectTest, a parser: no Gradle runs in CI): every version here is the one Once is
// tested with.
plugins {
    java
    id("org.springframework.boot") version "4.1.1"
}

group = "com.example"
version = "1.0.0-SNAPSHOT"

java {
    toolchain {
        languageVersion = JavaLanguageVersion.of(17)
    }
}

repositories {
    mavenLocal() // Once is not on Maven Central yet: ./mvnw install from a clone of it
    mavenCentral()
}

dependencies {
    implementation(platform("org.springframework.boot:spring-boot-dependencies:4.1.1"))
    implementation(platform("dev.once:once-bom:0.1.0-SNAPSHOT"))
    implementation("dev.once:once-spring-boot")
    implementation("org.springframework.boot:spring-boot-starter-webmvc")
    implementation("org.springframework.boot:spring-boot-starter-jdbc")
    implementation("org.postgresql:postgresql:42.7.14")
    implementation("com.zaxxer:HikariCP:7.1.0")
    testImplementation(platform("dev.once:once-bom:0.1.0-SNAPSHOT"))
    testImplementation("dev.once:once-testkit")
    testImplementation("org.springframework.boot:spring-boot-starter-test")
}

tasks.withType<JavaCompile> {
    options.compilerArgs.add("-parameters") // @Idempotent(key = "#request.id") reads names
}
