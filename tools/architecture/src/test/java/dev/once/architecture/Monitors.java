package dev.once.architecture;

import com.tngtech.archunit.thirdparty.org.objectweb.asm.ClassReader;
import com.tngtech.archunit.thirdparty.org.objectweb.asm.ClassVisitor;
import com.tngtech.archunit.thirdparty.org.objectweb.asm.Label;
import com.tngtech.archunit.thirdparty.org.objectweb.asm.MethodVisitor;
import com.tngtech.archunit.thirdparty.org.objectweb.asm.Opcodes;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * Reads compiled classes and finds every {@code synchronized} method and block, and every call made
 * while its monitor is held that blocks: a store call (any method of {@code IdempotencyStore}),
 * JDBC, a synchronous Redis or DynamoDB client call, a socket, or a wait (a future's
 * {@code get}/{@code join}, a latch, a lock, a sleep, {@code Object.wait}) — directly, or through
 * a method of the classes read that does (followed transitively). On JDK 21–23 a virtual thread
 * that blocks while it holds a monitor pins its carrier thread (JEP 491 lifted that in JDK 24).
 *
 * <p>The bytecode is read with the ASM that ArchUnit carries (shaded; ArchUnit is this module's
 * only dependency besides JUnit and AssertJ). A synchronized block is the code between a
 * {@code monitorenter} and its {@code monitorexit} in the order javac lays it out (the handler
 * that releases the monitor on an exception follows the block and calls nothing).
 *
 * <p>What it does not see: a call through an interface or a function it cannot resolve to a body
 * among the classes read (a {@code Supplier} passed in, a listener), which it counts as not
 * blocking; and a lambda's body, which runs later unless the call it is passed to runs it at once
 * (a {@code thenAccept} on a future already complete).
 */
final class Monitors {

  private static final String STORE = "dev/once/spi/IdempotencyStore";

  /** A synchronized method, or a method with synchronized blocks ("Class#method"). */
  record Site(String method, boolean synchronizedMethod, int blocks) {
    @Override
    public String toString() {
      return method + (synchronizedMethod ? " (synchronized method)" : "")
          + (blocks > 0 ? " (" + blocks + " synchronized block" + (blocks == 1 ? "" : "s") + ")"
          : "");
    }
  }

  /** A call made under a monitor that blocks, and why. */
  record Violation(String method, int line, String call, String why) {
    @Override
    public String toString() {
      return method + " (line " + line + ") holds a monitor across " + call
          + (why.startsWith("→") ? " " : ": ") + why;
    }
  }

  private record Call(String owner, String name, String desc, int line, boolean underMonitor) {
    String display() {
      return owner.replace('/', '.') + "." + name;
    }
  }

  private static final class MethodInfo {
    final String owner;
    final String name;
    final String desc;
    final boolean synchronizedMethod;
    final List<Call> calls = new ArrayList<>();
    int blocks;

    MethodInfo(String owner, String name, String desc, boolean synchronizedMethod) {
      this.owner = owner;
      this.name = name;
      this.desc = desc;
      this.synchronizedMethod = synchronizedMethod;
    }

    String display() {
      return owner.replace('/', '.') + "#" + name;
    }
  }

  private static final class ClassInfo {
    String superName;
    String[] interfaces = new String[0];
    final Map<String, MethodInfo> methods = new LinkedHashMap<>(); // name + desc
  }

  private final Map<String, ClassInfo> classes = new TreeMap<>();
  /** Why a method of the classes read blocks (null entry: it does not). */
  private final Map<MethodInfo, String> blocking = new HashMap<>();

  /** Reads every class file under the given directories. */
  static Monitors read(List<Path> directories) {
    Monitors monitors = new Monitors();
    for (Path directory : directories) {
      try (Stream<Path> files = Files.walk(directory)) {
        for (Path file : (Iterable<Path>) files.filter(f -> f.toString().endsWith(".class"))::iterator) {
          try (InputStream in = Files.newInputStream(file)) {
            monitors.read(in.readAllBytes());
          }
        }
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
    monitors.resolve();
    return monitors;
  }

  /** Reads the given classes from the class path (fixtures). */
  static Monitors read(Class<?>... types) {
    Monitors monitors = new Monitors();
    for (Class<?> type : types) {
      String resource = "/" + type.getName().replace('.', '/') + ".class";
      try (InputStream in = type.getResourceAsStream(resource)) {
        monitors.read(in.readAllBytes());
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
    monitors.resolve();
    return monitors;
  }

  private void read(byte[] bytes) {
    new ClassReader(bytes).accept(new ClassVisitor(Opcodes.ASM9) {
      private String owner;
      private ClassInfo info;

      @Override
      public void visit(int version, int access, String name, String signature, String superName,
          String[] interfaces) {
        owner = name;
        info = classes.computeIfAbsent(name, n -> new ClassInfo());
        info.superName = superName;
        info.interfaces = interfaces == null ? new String[0] : interfaces;
      }

      @Override
      public MethodVisitor visitMethod(int access, String name, String desc, String signature,
          String[] exceptions) {
        boolean synchronizedMethod = (access & Opcodes.ACC_SYNCHRONIZED) != 0;
        MethodInfo method = new MethodInfo(owner, name, desc, synchronizedMethod);
        info.methods.put(name + desc, method);
        return new MethodVisitor(Opcodes.ASM9) {
          private int depth;
          private int line;

          @Override
          public void visitLineNumber(int number, Label start) {
            line = number;
          }

          @Override
          public void visitInsn(int opcode) {
            if (opcode == Opcodes.MONITORENTER) {
              depth++;
              method.blocks++;
            } else if (opcode == Opcodes.MONITOREXIT) {
              depth = Math.max(0, depth - 1); // the exception handler's exit follows the block's
            }
          }

          @Override
          public void visitMethodInsn(int opcode, String callee, String callName,
              String callDesc, boolean isInterface) {
            method.calls.add(new Call(callee, callName, callDesc, line,
                synchronizedMethod || depth > 0));
          }
        };
      }
    }, ClassReader.SKIP_FRAMES);
  }

  /** Which methods of the classes read block, transitively (to a fixed point). */
  private void resolve() {
    List<MethodInfo> all = new ArrayList<>();
    classes.values().forEach(c -> all.addAll(c.methods.values()));
    boolean changed = true;
    while (changed) {
      changed = false;
      for (MethodInfo m : all) {
        if (blocking.get(m) != null) {
          continue;
        }
        for (Call call : m.calls) {
          String why = why(call);
          if (why != null) {
            blocking.put(m, call.display() + (why.startsWith("→") ? " " : ": ") + why);
            changed = true;
            break;
          }
        }
      }
    }
  }

  /**
   * Why {@code call} blocks, or null: what it is ("JDBC"), or, for a method of the classes read,
   * the chain of calls to what blocks ("→ A.b → java.sql.Connection.prepareStatement: JDBC").
   */
  private String why(Call call) {
    String api = blockingApi(call.owner(), call.name());
    if (api != null) {
      return api;
    }
    MethodInfo target = find(call.owner(), call.name() + call.desc());
    if (target != null && blocking.get(target) != null) {
      return "→ " + blocking.get(target);
    }
    return null;
  }

  /** The method with this name and descriptor in {@code owner} or its superclasses, if read. */
  private MethodInfo find(String owner, String nameAndDesc) {
    for (String c = owner; c != null; ) {
      ClassInfo info = classes.get(c);
      if (info == null) {
        return null;
      }
      MethodInfo m = info.methods.get(nameAndDesc);
      if (m != null) {
        return m;
      }
      c = info.superName;
    }
    return null;
  }

  private boolean isStore(String type) {
    if (type == null) {
      return false;
    }
    if (type.equals(STORE)) {
      return true;
    }
    ClassInfo info = classes.get(type);
    if (info == null) {
      return false;
    }
    for (String i : info.interfaces) {
      if (isStore(i)) {
        return true;
      }
    }
    return isStore(info.superName);
  }

  /** Why a call of this library or JDK method blocks, or null. */
  private String blockingApi(String owner, String name) {
    if (isStore(owner) && !Set.of("<init>", "toString", "hashCode", "equals").contains(name)) {
      return "a store call";
    }
    if (owner.startsWith("java/sql/") || owner.startsWith("javax/sql/")) {
      return "JDBC";
    }
    if (owner.startsWith("io/lettuce/")) {
      boolean sync = owner.contains("/api/sync/") || owner.contains("/sync/");
      boolean connects = name.startsWith("connect") && !name.endsWith("Async");
      boolean closes = (name.equals("close") || name.equals("shutdown"))
          && !owner.endsWith("Future");
      boolean waits = owner.endsWith("Future") && (name.equals("get") || name.equals("await"));
      if (sync || connects || closes || waits) {
        return "a synchronous Redis client call";
      }
      return null;
    }
    if (owner.startsWith("software/amazon/awssdk/") && owner.endsWith("Client")
        && !owner.endsWith("AsyncClient")) {
      return "a synchronous AWS SDK call";
    }
    if (owner.startsWith("java/net/") || owner.startsWith("java/nio/channels/")) {
      return "network IO";
    }
    if (owner.equals("java/lang/Thread") && Set.of("sleep", "join").contains(name)
        || owner.equals("java/lang/Object") && name.equals("wait")
        || owner.equals("java/util/concurrent/locks/LockSupport") && name.startsWith("park")) {
      return "a wait";
    }
    if (owner.startsWith("java/util/concurrent/")) {
      boolean futureWait = (owner.endsWith("Future") || owner.endsWith("FutureTask"))
          && Set.of("get", "join").contains(name);
      boolean latchWait = Set.of("await", "acquire", "take", "put", "lock", "lockInterruptibly",
          "invokeAll", "invokeAny", "awaitTermination", "close").contains(name)
          && !owner.endsWith("Map") && !owner.endsWith("Set") && !owner.endsWith("List");
      if (futureWait || latchWait) {
        return "a wait";
      }
    }
    return null;
  }

  /** Every synchronized method, and every method with synchronized blocks, by name. */
  List<Site> sites() {
    List<Site> sites = new ArrayList<>();
    for (ClassInfo c : classes.values()) {
      Map<String, Site> byName = new LinkedHashMap<>();
      for (MethodInfo m : c.methods.values()) {
        if (m.synchronizedMethod || m.blocks > 0) {
          byName.merge(m.display(), new Site(m.display(), m.synchronizedMethod, m.blocks),
              (a, b) -> new Site(a.method(), a.synchronizedMethod() || b.synchronizedMethod(),
                  a.blocks() + b.blocks()));
        }
      }
      sites.addAll(byName.values());
    }
    return sites;
  }

  /** Every blocking call made while a monitor is held. */
  List<Violation> violations() {
    List<Violation> violations = new ArrayList<>();
    for (ClassInfo c : classes.values()) {
      for (MethodInfo m : c.methods.values()) {
        for (Call call : m.calls) {
          if (call.underMonitor()) {
            String why = why(call);
            if (why != null) {
              violations.add(new Violation(m.display(), call.line(), call.display(), why));
            }
          }
        }
      }
    }
    return violations;
  }
}
