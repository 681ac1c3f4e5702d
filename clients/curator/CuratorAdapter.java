// lockcheck adapter for Apache Curator's InterProcessMutex (Debian libcurator-recipes-java 5.4.0 over
// libzookeeper-java 3.8.0), speaking lockcheck's JSON-lines protocol 2 (locks/README-external.md).
//
// scripts/build-clients compiles this file with javac against Debian's jars into build/clients/curator/ and writes
// the launcher build/clients/curator.sh (exec java ..., so the adapter's pid is the JVM's: client-pause stops it).
//
// One CuratorFramework (one ZooKeeper session) per adapter, connected on the first request to every node of the
// request (the members' client ports through the harness's fault proxy; Curator's ensemble tracker is off so that
// it never swaps them for the members' own addresses), session timeout = the request's ttl_ms (the server clamps
// it; the adapter uses the negotiated one), connection timeout = op_timeout_ms. One InterProcessMutex per key on
// /lockcheck/<key>.
//
// What Curator does (curator-recipes LockInternals, curator-framework ConnectionStateManager, 5.4.0):
//   - acquire(time, unit) creates a protected EPHEMERAL_SEQUENTIAL node "_c_<uuid>-lock-<seq>" and holds the lock
//     when its node sorts first; otherwise it watches the predecessor and waits up to `time` (0: a try), then
//     deletes its node and returns false. Ownership is per thread: this adapter runs every lock call on one thread.
//   - release() deletes the node (guaranteed: retried in the background on connection trouble) and swallows
//     NoNodeException: after the session expired it "releases" a node that is long gone and says nothing.
//   - InterProcessMutex never watches its session (isAcquiredInThisProcess stays true). The caller learns of
//     trouble from a ConnectionStateListener: SUSPENDED when the ZooKeeper client's connection dropped (no answer
//     to its pings for 2/3 of the negotiated timeout, or a socket error), LOST when the session expired, which
//     Curator 5 also SIMULATES: ConnectionStateManager.processEvents injects a session expiration once the
//     negotiated timeout x simulatedSessionExpirationPercent (100%) has passed since SUSPENDED (wall clock), so
//     LOST comes without a reconnect to the ensemble (kazoo's and the plain ZooKeeper client's do not).
//
// What the answers say (as the kazoo adapter, clients/kazoo/adapter.py):
//   - validity_ms: negotiated session timeout minus the time since the send of the op's latest answered request
//     (the acquire's start, or the checkExists() after it, made with --fencing and after a blocking wait): each
//     request touches the session on the server.
//   - keys: the lock node's path; token (fencing): its czxid (checkExists() after the acquire).
//   - `lost` for each held key on SUSPENDED (default) or only on LOST (--lost-only).
//   - release: the library's release(); not_held when the session that created the node is no longer the
//     client's (Curator swallowed the NoNode).
//   - extend: InterProcessMutex has none (the session is kept alive in the background); the adapter reads the
//     node (checkExists()) and answers a fresh validity while the node is there and owned by the session.
// Outcomes: acquire false with no connection trouble during the call: held (definite); an exception, or false
// after the connection dropped, or no answer within op_timeout_ms (+ --wait-ms): indeterminate (the node may have
// been created and left). After a late answer the lock thread is stuck: every later request is indeterminate.
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.data.Stat;

public final class CuratorAdapter {
  static final ObjectMapper JSON = new ObjectMapper();
  static final String ROOT = "/lockcheck";

  // InterProcessMutex keeps its node's path to itself (protected getLockPath).
  static final class Mutex extends InterProcessMutex {
    Mutex(CuratorFramework client, String path) { super(client, path); }
    String nodePath() { return getLockPath(); }
  }

  static final class Holding {
    final Mutex mutex;
    final String path;
    final long sessionId;
    volatile boolean notified;
    Holding(Mutex mutex, String path, long sessionId) { this.mutex = mutex; this.path = path; this.sessionId = sessionId; }
  }

  // Options (flags); 0 means "from the request".
  long waitMs = 0, sessionTimeoutMs = 0, connectTimeoutMs = 0;
  int retries = 0, expirationPercent = 100;
  boolean lostOnly = false;

  CuratorFramework client;
  final Map<String, Holding> held = new ConcurrentHashMap<>();
  final AtomicInteger drops = new AtomicInteger();  // SUSPENDED/LOST so far: did the connection drop during an op?
  final ExecutorService lockThread = Executors.newSingleThreadExecutor(r -> {
    Thread t = new Thread(r, "lockcheck-lock");
    t.setDaemon(true);
    return t;
  });
  volatile boolean v2 = false, stuck = false;

  static synchronized void write(ObjectNode n) {
    System.out.println(n.toString());
    System.out.flush();
  }

  static ObjectNode fail(String reason, String error, boolean indeterminate) {
    ObjectNode n = JSON.createObjectNode();
    n.put("ok", false);
    n.put("reason", reason);
    n.put("error", error);
    if (indeterminate) n.put("indeterminate", true);
    return n;
  }

  static String describe(Throwable e) {
    String m = e.getMessage();
    return e.getClass().getSimpleName() + (m == null ? "" : ": " + m.replace('\n', ' '));
  }

  void onState(ConnectionState s) {
    if (s != ConnectionState.SUSPENDED && s != ConnectionState.LOST) return;
    drops.incrementAndGet();
    if (!v2 || (s == ConnectionState.SUSPENDED && lostOnly)) return;
    for (Map.Entry<String, Holding> e : held.entrySet()) {
      Holding h = e.getValue();
      if (h.notified) continue;
      h.notified = true;
      ObjectNode ev = JSON.createObjectNode();
      ev.put("event", "lost");
      ev.put("key", e.getKey());
      ev.put("detail", s == ConnectionState.SUSPENDED
          ? "Curator state SUSPENDED: the connection to the ensemble dropped (the session may live on)"
          : "Curator state LOST: the session expired (or Curator simulated its expiry after the session timeout)");
      write(ev);
    }
  }

  ObjectNode connect(JsonNode req) throws InterruptedException {
    if (client != null) return null;
    List<String> nodes = new ArrayList<>();
    req.get("nodes").forEach(n -> nodes.add(n.asText()));
    int ttl = (int) (sessionTimeoutMs > 0 ? sessionTimeoutMs : req.get("ttl_ms").asLong());
    int op = req.get("op_timeout_ms").asInt();
    CuratorFramework c = CuratorFrameworkFactory.builder()
        .connectString(String.join(",", nodes))
        .sessionTimeoutMs(ttl)
        .connectionTimeoutMs(op)
        .retryPolicy(new RetryNTimes(retries, 100))
        .simulatedSessionExpirationPercent(expirationPercent)
        .ensembleTracker(false)
        .build();
    c.getConnectionStateListenable().addListener((cf, s) -> onState(s));
    c.start();
    long bound = connectTimeoutMs > 0 ? connectTimeoutMs : (long) op * nodes.size();
    if (!c.blockUntilConnected((int) bound, TimeUnit.MILLISECONDS)) {
      c.close();
      return fail("unreachable", "Curator: not connected within " + bound + " ms", false);
    }
    client = c;
    return null;
  }

  long sessionId() throws Exception { return client.getZookeeperClient().getZooKeeper().getSessionId(); }

  long validity(long sentNanos) {
    return client.getZookeeperClient().getLastNegotiatedSessionTimeoutMs() - (System.nanoTime() - sentNanos) / 1_000_000;
  }

  ObjectNode acquire(JsonNode req) throws Exception {
    String key = req.get("key").asText();
    if (held.containsKey(key)) return fail("held", "already held by this client", false);
    Mutex m = new Mutex(client, ROOT + "/" + key);
    int before = drops.get();
    long sent = System.nanoTime();
    boolean got;
    try {
      got = m.acquire(waitMs, TimeUnit.MILLISECONDS);
    } catch (Exception e) {
      return fail("timeout", describe(e), true);
    }
    if (!got) {
      if (drops.get() != before || !client.getZookeeperClient().isConnected()) {
        return fail("timeout", "acquire returned false after the connection dropped", true);
      }
      return fail("held", "InterProcessMutex.acquire returned false", false);
    }
    String path = m.nodePath();
    long sid = sessionId();
    ObjectNode ans = JSON.createObjectNode();
    ans.put("ok", true);
    ans.putArray("keys").add(path);
    boolean fencing = req.path("fencing").asBoolean(false);
    if (fencing || waitMs > 0) {
      // The czxid, and after a wait (while the client's pings kept the session) a fresh answered request.
      sent = System.nanoTime();
      Stat st;
      try {
        st = client.checkExists().forPath(path);
      } catch (Exception e) {
        held.put(key, new Holding(m, path, sid));  // it was held, at least for a moment
        return fail("timeout", "checkExists(" + path + ") after the acquire: " + describe(e), true);
      }
      if (st == null || st.getEphemeralOwner() != sid) {
        return fail("not_held", "the lock node " + path + " vanished before its czxid was read", false);
      }
      if (fencing) ans.put("token", st.getCzxid());
    }
    long v = validity(sent);
    if (v <= 0) {
      try { m.release(); } catch (Exception ignored) { }
      return fail("not_held", "the session timeout had passed when the acquire ended", false);
    }
    ans.put("validity_ms", v);
    ans.put("mono_ns", System.nanoTime());  // CLOCK_MONOTONIC on Linux: lockcheck takes the answer's lag off the validity
    held.put(key, new Holding(m, path, sid));
    return ans;
  }

  ObjectNode release(JsonNode req) throws Exception {
    Holding h = held.remove(req.get("key").asText());
    if (h == null) return fail("not_held", "not held by this client", false);
    try {
      h.mutex.release();
    } catch (IllegalMonitorStateException e) {
      return fail("not_held", describe(e), false);
    } catch (Exception e) {
      return fail("timeout", describe(e), true);
    }
    if (sessionId() != h.sessionId) {
      return fail("not_held", "the session that held " + h.path
          + " expired (Curator's release swallowed the NoNode, deleting nothing)", false);
    }
    ObjectNode ans = JSON.createObjectNode();
    ans.put("ok", true);
    ans.putArray("keys").add(h.path);
    return ans;
  }

  ObjectNode extend(JsonNode req) throws Exception {
    Holding h = held.get(req.get("key").asText());
    if (h == null) return fail("not_held", "not held by this client", false);
    long sent = System.nanoTime();
    Stat st;
    try {
      st = client.checkExists().forPath(h.path);
    } catch (Exception e) {
      return fail("timeout", describe(e), true);
    }
    if (st == null || st.getEphemeralOwner() != h.sessionId || sessionId() != h.sessionId) {
      return fail("not_held", "the lock node " + h.path + " is gone (its session expired)", false);
    }
    ObjectNode ans = JSON.createObjectNode();
    ans.put("ok", true);
    ans.put("validity_ms", validity(sent));
    ans.put("mono_ns", System.nanoTime());
    ans.putArray("keys").add(h.path);
    return ans;
  }

  ObjectNode handle(JsonNode req) throws Exception {
    if (stuck) return fail("timeout", "an earlier op of this adapter never ended", true);
    if (!req.path("nodes").isArray() || req.get("nodes").size() == 0 || req.path("op_timeout_ms").asLong() <= 0) {
      return fail("error", "the request needs nodes and op_timeout_ms > 0", false);
    }
    ObjectNode refused = connect(req);
    if (refused != null) return refused;
    String op = req.path("op").asText();
    Future<ObjectNode> f;
    switch (op) {
      case "acquire": f = lockThread.submit(() -> acquire(req)); break;
      case "release": f = lockThread.submit(() -> release(req)); break;
      case "extend": f = lockThread.submit(() -> extend(req)); break;
      default: return fail("error", "unknown op " + op, false);
    }
    long bound = req.get("op_timeout_ms").asLong() + (op.equals("acquire") ? waitMs : 0);
    try {
      return f.get(bound + 200, TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      stuck = true;
      return fail("timeout", "no answer from the ensemble within " + bound + " ms", true);
    } catch (java.util.concurrent.ExecutionException e) {
      return fail("timeout", describe(e.getCause()), true);
    }
  }

  static long number(String[] args, int i, String flag) {
    if (i >= args.length) usage(flag + " needs a value");
    try {
      long v = Long.parseLong(args[i]);
      if (v < 0) usage(flag + " must be >= 0");
      return v;
    } catch (NumberFormatException e) {
      usage(flag + ": '" + args[i] + "' is not an integer");
      return 0;
    }
  }

  static void usage(String why) {
    System.err.println("curator adapter: " + why + " (flags: --wait-ms N, --lost-only, --session-timeout-ms N, "
        + "--connect-timeout-ms N, --retries N, --expiration-percent 1-100)");
    System.exit(2);
  }

  public static void main(String[] args) throws Exception {
    CuratorAdapter a = new CuratorAdapter();
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--wait-ms": a.waitMs = number(args, ++i, "--wait-ms"); break;
        case "--session-timeout-ms": a.sessionTimeoutMs = number(args, ++i, "--session-timeout-ms"); break;
        case "--connect-timeout-ms": a.connectTimeoutMs = number(args, ++i, "--connect-timeout-ms"); break;
        case "--retries": a.retries = (int) number(args, ++i, "--retries"); break;
        case "--expiration-percent": a.expirationPercent = (int) number(args, ++i, "--expiration-percent"); break;
        case "--lost-only": a.lostOnly = true; break;
        default: usage("unknown argument '" + args[i] + "'");
      }
    }
    if (a.expirationPercent < 1 || a.expirationPercent > 100) usage("--expiration-percent must be 1-100");
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String line;
    while ((line = in.readLine()) != null) {
      JsonNode req;
      try {
        req = JSON.readTree(line);
      } catch (Exception e) {
        write(fail("error", "bad request: " + describe(e), false));
        continue;
      }
      boolean proto2 = req.path("protocol").asInt(0) == 2;
      if (proto2 && !a.v2) {
        a.v2 = true;
        if (a.waitMs > 0) {
          ObjectNode hello = JSON.createObjectNode();
          hello.put("event", "hello");
          hello.put("max_call_ms", a.waitMs + req.path("op_timeout_ms").asLong(500) + 1000);
          write(hello);
        }
      }
      ObjectNode ans;
      try {
        ans = a.handle(req);
      } catch (Exception e) {
        ans = fail("error", describe(e), true);
      }
      if (!proto2) {
        ans.remove("keys");
        ans.remove("reason");
      }
      write(ans);
    }
    System.exit(0);  // Curator's threads are not daemons
  }
}
