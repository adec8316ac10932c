/*
 * The API guard: lists a module's public API and compares it with the committed listing.
 *
 * Run by exec-maven-plugin in the verify phase of every published module (see the root pom and
 * CONTRIBUTING.md), as a single-file source program on the module's compile classpath:
 *
 *   java -cp <target/classes + compile classpath> tools/ApiGuard.java \
 *       <classes dir> <api file> <artifactId> <update: true|false>
 *
 * The API is every public or protected type outside *.internal packages that is reachable from
 * outside (enclosing types public too), with its supertypes and its public and protected
 * constructors, methods and fields (declared ones; synthetic and bridge members left out), with
 * generic signatures. Types and members are sorted, so the listing only changes when the API does.
 * Classes are loaded without being initialised.
 */

import java.io.IOException;
import java.lang.reflect.Constructor;
import java.lang.reflect.Executable;
import java.lang.reflect.Field;
import java.lang.reflect.Member;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Type;
import java.lang.reflect.TypeVariable;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;

public final class ApiGuard {

  private static final String ACCEPT = "./mvnw -o -q verify -DskipTests -Dapi.update";

  public static void main(String[] args) throws Exception {
    if (args.length != 4) {
      System.err.println("usage: ApiGuard <classes dir> <api file> <artifactId> <update>");
      System.exit(2);
    }
    Path classes = Path.of(args[0]);
    Path apiFile = Path.of(args[1]);
    String artifactId = args[2];
    boolean update = args[3].isEmpty() || Boolean.parseBoolean(args[3]);

    if (!Files.isDirectory(classes)) {
      return; // a pom module, or nothing compiled: no API
    }
    List<String> actual = listing(classes, artifactId);
    List<String> expected = Files.exists(apiFile)
        ? Files.readAllLines(apiFile, StandardCharsets.UTF_8)
        : List.of();
    if (actual.equals(expected)) {
      return;
    }
    Path shown = Path.of("").toAbsolutePath().relativize(apiFile.toAbsolutePath());
    if (update) {
      Files.createDirectories(apiFile.getParent());
      Files.write(apiFile, actual, StandardCharsets.UTF_8);
      System.out.println("[api] " + artifactId + ": wrote " + shown
          + " - review it with git diff and commit it with the change.");
      return;
    }
    StringBuilder message = new StringBuilder();
    message.append("\n[api] The public API of ").append(artifactId)
        .append(expected.isEmpty() && !Files.exists(apiFile)
            ? " has no committed listing yet (" + shown + ").\n"
            : " differs from the committed listing " + shown + ":\n\n");
    message.append(diff(expected, actual, shown.toString()));
    message.append("\n[api] If the change is intended, accept it (it rewrites the listing) and commit "
        + "the listing with the change:\n[api]   " + ACCEPT + "\n"
        + "[api] (-pl <module> for one module). Otherwise restore the API. See CONTRIBUTING.md.\n");
    System.err.print(message);
    System.exit(1);
  }

  // ---------------------------------------------------------------------------------- listing

  static List<String> listing(Path classes, String artifactId) throws IOException {
    List<String> names;
    try (Stream<Path> files = Files.walk(classes)) {
      names = files
          .filter(p -> p.toString().endsWith(".class"))
          .map(p -> classes.relativize(p).toString().replace('\\', '/'))
          .filter(n -> !n.endsWith("module-info.class") && !n.endsWith("package-info.class"))
          .map(n -> n.substring(0, n.length() - ".class".length()).replace('/', '.'))
          .filter(n -> !isInternal(n))
          .sorted()
          .collect(Collectors.toList());
    }
    ClassLoader loader = ApiGuard.class.getClassLoader();
    List<Class<?>> types = new ArrayList<>();
    for (String name : names) {
      Class<?> type;
      try {
        type = Class.forName(name, false, loader);
      } catch (ClassNotFoundException | LinkageError e) {
        throw new IllegalStateException("cannot load " + name + " from " + classes + ": " + e, e);
      }
      if (isExported(type)) {
        types.add(type);
      }
    }
    types.sort((a, b) -> a.getName().compareTo(b.getName()));

    List<String> out = new ArrayList<>();
    out.add("# The public API of " + artifactId + " (outside *.internal packages), checked by "
        + "tools/ApiGuard.java in ./mvnw verify.");
    out.add("# Generated: do not edit. Accept a reviewed change with: " + ACCEPT);
    for (Class<?> type : types) {
      out.add("");
      out.add(typeLine(type));
      // fields, constructors, then methods; each sorted by name, then by signature
      List<String[]> members = new ArrayList<>();
      try {
        for (Field f : type.getDeclaredFields()) {
          if (visible(f) && !f.isSynthetic()) {
            members.add(new String[] {"1", f.getName(), fieldLine(f)});
          }
        }
        for (Constructor<?> c : type.getDeclaredConstructors()) {
          if (visible(c) && !c.isSynthetic()) {
            members.add(new String[] {"2", "", executableLine(c, "")});
          }
        }
        for (Method m : type.getDeclaredMethods()) {
          if (visible(m) && !m.isSynthetic() && !m.isBridge()) {
            members.add(new String[] {"3", m.getName(), methodLine(m)});
          }
        }
      } catch (LinkageError e) {
        throw new IllegalStateException("cannot read the members of " + type.getName()
            + " (a type in a signature is not on the compile classpath?): " + e, e);
      }
      members.sort(Comparator.<String[], String>comparing(x -> x[0])
          .thenComparing(x -> x[1]).thenComparing(x -> x[2]));
      members.forEach(x -> out.add("  " + x[2]));
    }
    return out;
  }

  static boolean isInternal(String className) {
    String pkg = className.contains(".") ? className.substring(0, className.lastIndexOf('.')) : "";
    return ("." + pkg + ".").contains(".internal.");
  }

  /** Public or protected, and so is every enclosing type. */
  static boolean isExported(Class<?> type) {
    if (type.isAnonymousClass() || type.isLocalClass() || type.isSynthetic()) {
      return false;
    }
    for (Class<?> t = type; t != null; t = t.getDeclaringClass()) {
      int m = t.getModifiers();
      if (!Modifier.isPublic(m) && !Modifier.isProtected(m)) {
        return false;
      }
    }
    return true;
  }

  static boolean visible(Member member) {
    int m = member.getModifiers();
    return Modifier.isPublic(m) || Modifier.isProtected(m);
  }

  static String typeLine(Class<?> type) {
    StringBuilder s = new StringBuilder();
    int mods = type.getModifiers();
    String kind;
    if (type.isAnnotation()) {
      kind = "@interface";
      mods &= ~(Modifier.ABSTRACT | Modifier.INTERFACE);
    } else if (type.isInterface()) {
      kind = "interface";
      mods &= ~(Modifier.ABSTRACT | Modifier.INTERFACE);
    } else if (type.isEnum()) {
      kind = "enum";
      mods &= ~(Modifier.FINAL | Modifier.ABSTRACT);
    } else if (type.isRecord()) {
      kind = "record";
      mods &= ~Modifier.FINAL;
    } else {
      kind = "class";
    }
    s.append(Modifier.toString(mods & ~(Modifier.STRICT | Modifier.SYNCHRONIZED)));
    if (type.isSealed()) {
      s.append(s.length() > 0 ? " " : "").append("sealed");
    }
    s.append(s.length() > 0 ? " " : "").append(kind).append(' ').append(name(type));
    s.append(typeParameters(type.getTypeParameters()));
    Type superclass = type.getGenericSuperclass();
    if (superclass != null && superclass != Object.class && !type.isEnum() && !type.isRecord()) {
      s.append(" extends ").append(name(superclass));
    }
    Type[] interfaces = type.getGenericInterfaces();
    if (type.isAnnotation()) {
      interfaces = new Type[0];
    }
    if (interfaces.length > 0) {
      s.append(type.isInterface() ? " extends " : " implements ")
          .append(Arrays.stream(interfaces).map(ApiGuard::name).collect(Collectors.joining(", ")));
    }
    if (type.isSealed()) {
      s.append(" permits ").append(Arrays.stream(type.getPermittedSubclasses())
          .map(ApiGuard::name).sorted().collect(Collectors.joining(", ")));
    }
    return s.toString();
  }

  static String fieldLine(Field f) {
    String mods = Modifier.toString(f.getModifiers() & Modifier.fieldModifiers()
        & ~(Modifier.TRANSIENT | Modifier.VOLATILE));
    if (f.isEnumConstant()) {
      return "enum constant " + f.getName();
    }
    return mods + " " + name(f.getGenericType()) + " " + f.getName();
  }

  static String methodLine(Method m) {
    return executableLine(m, name(m.getGenericReturnType()) + " ");
  }

  static String executableLine(Executable e, String returnType) {
    StringBuilder s = new StringBuilder();
    int mods = e.getModifiers() & (e instanceof Method ? Modifier.methodModifiers()
        : Modifier.constructorModifiers());
    mods &= ~(Modifier.SYNCHRONIZED | Modifier.NATIVE | Modifier.STRICT);
    boolean inInterface = e.getDeclaringClass().isInterface();
    if (inInterface) {
      mods &= ~Modifier.ABSTRACT;
    }
    s.append(Modifier.toString(mods));
    if (e instanceof Method && ((Method) e).isDefault()) {
      s.append(s.length() > 0 ? " " : "").append("default");
    }
    String typeParameters = typeParameters(e.getTypeParameters());
    if (!typeParameters.isEmpty()) {
      s.append(s.length() > 0 ? " " : "").append(typeParameters);
    }
    s.append(s.length() > 0 ? " " : "").append(returnType);
    s.append(e instanceof Constructor ? simpleName(e.getDeclaringClass()) : e.getName());
    Type[] parameters = e.getGenericParameterTypes();
    if (e instanceof Constructor && parameters.length != e.getParameterCount()) {
      parameters = e.getParameterTypes(); // inner-class or enum constructors: erased but complete
    }
    List<String> ps = new ArrayList<>();
    for (int i = 0; i < parameters.length; i++) {
      String p = name(parameters[i]);
      if (e.isVarArgs() && i == parameters.length - 1 && p.endsWith("[]")) {
        p = p.substring(0, p.length() - 2) + "...";
      }
      ps.add(p);
    }
    s.append('(').append(String.join(", ", ps)).append(')');
    Type[] exceptions = e.getGenericExceptionTypes();
    if (exceptions.length > 0) {
      s.append(" throws ").append(Arrays.stream(exceptions).map(ApiGuard::name)
          .collect(Collectors.joining(", ")));
    }
    return s.toString();
  }

  static String typeParameters(TypeVariable<?>[] variables) {
    if (variables.length == 0) {
      return "";
    }
    List<String> vs = new ArrayList<>();
    for (TypeVariable<?> v : variables) {
      Type[] bounds = v.getBounds();
      if (bounds.length == 1 && bounds[0] == Object.class) {
        vs.add(v.getName());
      } else {
        vs.add(v.getName() + " extends " + Arrays.stream(bounds).map(ApiGuard::name)
            .collect(Collectors.joining(" & ")));
      }
    }
    return "<" + String.join(", ", vs) + ">";
  }

  static String simpleName(Class<?> c) {
    String n = name(c);
    return n.substring(n.lastIndexOf('.') + 1);
  }

  /** A type as source spells it (nested types with dots), java.lang. left out. */
  static String name(Type type) {
    String n = type instanceof Class<?> ? ((Class<?>) type).getTypeName() : type.getTypeName();
    n = n.replace('$', '.');
    return n.replaceAll("\\bjava\\.lang\\.(?=[A-Z])", "");
  }

  // ------------------------------------------------------------------------------------- diff

  /** A unified diff (3 lines of context) of two listings. */
  static String diff(List<String> a, List<String> b, String name) {
    int n = a.size();
    int m = b.size();
    int[][] lcs = new int[n + 1][m + 1];
    for (int i = n - 1; i >= 0; i--) {
      for (int j = m - 1; j >= 0; j--) {
        lcs[i][j] = a.get(i).equals(b.get(j)) ? lcs[i + 1][j + 1] + 1
            : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
      }
    }
    // edit script: ' ', '-', '+' with the line
    List<String[]> ops = new ArrayList<>();
    int i = 0;
    int j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && a.get(i).equals(b.get(j))) {
        ops.add(new String[] {" ", a.get(i++)});
        j++;
      } else if (j < m && (i == n || lcs[i][j + 1] >= lcs[i + 1][j])) {
        ops.add(new String[] {"+", b.get(j++)});
      } else {
        ops.add(new String[] {"-", a.get(i++)});
      }
    }
    StringBuilder out = new StringBuilder();
    out.append("--- ").append(name).append(" (committed)\n");
    out.append("+++ ").append(name).append(" (built)\n");
    int context = 3;
    int k = 0;
    while (k < ops.size()) {
      if (ops.get(k)[0].equals(" ")) {
        k++;
        continue;
      }
      int start = Math.max(0, k - context);
      int end = k;
      // extend the hunk while changes are within 2 * context of each other
      int last = k;
      while (end < ops.size()) {
        if (!ops.get(end)[0].equals(" ")) {
          last = end;
        } else if (end - last > 2 * context) {
          break;
        }
        end++;
      }
      end = Math.min(ops.size(), last + context + 1);
      int oldLine = 1;
      int newLine = 1;
      for (int x = 0; x < start; x++) {
        if (!ops.get(x)[0].equals("+")) {
          oldLine++;
        }
        if (!ops.get(x)[0].equals("-")) {
          newLine++;
        }
      }
      int oldCount = 0;
      int newCount = 0;
      for (int x = start; x < end; x++) {
        if (!ops.get(x)[0].equals("+")) {
          oldCount++;
        }
        if (!ops.get(x)[0].equals("-")) {
          newCount++;
        }
      }
      out.append("@@ -").append(oldLine).append(',').append(oldCount)
          .append(" +").append(newLine).append(',').append(newCount).append(" @@\n");
      for (int x = start; x < end; x++) {
        out.append(ops.get(x)[0]).append(ops.get(x)[1]).append('\n');
      }
      k = end;
    }
    return out.toString();
  }
}
