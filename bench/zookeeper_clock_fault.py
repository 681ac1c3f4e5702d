#!/usr/bin/python3
"""Does a wall-clock jump on ZooKeeper members expire a session? (README, "ZooKeeper: the third lock service")

Starts a three-member ZooKeeper ensemble (Debian's zookeeper 3.8, zoo.cfg as lockcheck writes it: tickTime
1000 ms) with lockcheck's clock shim preloaded (LD_PRELOAD; each member its own clock file), opens a kazoo
session with a 2 s timeout that owns an ephemeral node, then moves every member's wall clock (CLOCK_REALTIME) by
+STEP s and later -STEP s. Prints, per phase, whether the session was expired (the ephemeral node gone, as a
second session sees it), and the wall-clock time each member's own log shows, which says whether the shim
reached the JVM at all (slf4j-simple stamps lines with System.currentTimeMillis).

Usage: bench/zookeeper_clock_fault.py SHIM.so [STEP_S]   (uses /usr/bin/python3 for Debian's python3-kazoo)
Everything runs in a temporary folder, which is removed with the members at the end (also on error).
"""
import os, re, shutil, signal, socket, struct, subprocess, sys, tempfile, time

from kazoo.client import KazooClient

SHIM = os.path.abspath(sys.argv[1])
STEP = int(sys.argv[2]) if len(sys.argv) > 2 else 60
N = 3


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def write_clock(path, gen, offset_ns):
    # cluster/clock_shim.h: word 0 the generation g, slot g % 2 (offset ns, rate ppb, anchor ns) in force.
    with open(path, "r+b") as f:
        f.seek(8 + 24 * (gen & 1))
        f.write(struct.pack("<qqq", offset_ns, 0, 0))
        f.flush()
        f.seek(0)
        f.write(struct.pack("<Q", gen))


def srvr(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"srvr")
            data = b""
            while True:
                x = s.recv(4096)
                if not x:
                    return data.decode()
                data += x
    except OSError:
        return ""


def last_log_time(path):
    # slf4j-simple's date: 2026-12-06T06:30:01.123+0000
    stamp = None
    with open(path, errors="replace") as f:
        for line in f:
            m = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)", line)
            if m:
                stamp = m.group(1)
    return stamp


def main():
    d = tempfile.mkdtemp(prefix="lockcheck-zkclock-")
    procs = []
    try:
        client = [free_port() for _ in range(N)]
        quorum = [free_port() for _ in range(N)]
        election = [free_port() for _ in range(N)]
        for i in range(N):
            md = os.path.join(d, "n%d" % (i + 1))
            os.makedirs(os.path.join(md, "data"))
            with open(os.path.join(md, "data", "myid"), "w") as f:
                f.write("%d\n" % (i + 1))
            lines = ["tickTime=1000", "initLimit=10", "syncLimit=5", "dataDir=%s/data" % md,
                     "clientPort=%d" % client[i], "clientPortAddress=127.0.0.1", "admin.enableServer=false",
                     "4lw.commands.whitelist=srvr", "minSessionTimeout=2000", "maxSessionTimeout=20000"]
            for j in range(N):
                host = "0.0.0.0" if i == j else "127.0.0.1"
                lines.append("server.%d=%s:%d:%d" % (j + 1, host, quorum[j], election[j]))
            with open(os.path.join(md, "zoo.cfg"), "w") as f:
                f.write("\n".join(lines) + "\n")
            with open(os.path.join(md, "clock"), "wb") as f:
                f.write(b"\0" * 64)
            env = dict(os.environ, LD_PRELOAD=SHIM, LOCKCHECK_CLOCK_FILE=os.path.join(md, "clock"))
            log = open(os.path.join(md, "log"), "w")
            procs.append(subprocess.Popen(
                ["java", "-Xms32m", "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData",
                 "-Djava.net.preferIPv4Stack=true", "-Dorg.slf4j.simpleLogger.showDateTime=true",
                 "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSSZ",
                 "-cp", "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar",
                 "org.apache.zookeeper.server.quorum.QuorumPeerMain", os.path.join(md, "zoo.cfg")],
                stdout=log, stderr=subprocess.STDOUT, env=env))
        deadline = time.time() + 60
        while time.time() < deadline:
            modes = [re.search(r"Mode: (\w+)", srvr(p)) for p in client]
            if all(modes) and sum(m.group(1) == "leader" for m in modes) == 1:
                break
            time.sleep(0.3)
        else:
            raise SystemExit("the ensemble did not elect a leader within 60 s")
        hosts = ",".join("127.0.0.1:%d" % p for p in client)
        holder = KazooClient(hosts=hosts, timeout=2.0)
        holder.start(timeout=15)
        print("session 0x%x, negotiated timeout %d ms" % (holder.client_id[0], holder._session_timeout))
        holder.create("/clock-probe", b"", ephemeral=True)
        watcher = KazooClient(hosts=hosts, timeout=10.0)
        watcher.start(timeout=15)
        gen = [0] * N

        def phase(name, offset_s, seconds):
            for i in range(N):
                gen[i] += 1
                write_clock(os.path.join(d, "n%d" % (i + 1), "clock"), gen[i], offset_s * 10**9)
            t0 = time.time()
            gone_at = None
            while time.time() - t0 < seconds:
                if gone_at is None and watcher.exists("/clock-probe") is None:
                    gone_at = time.time() - t0
                time.sleep(0.2)
            logs = [last_log_time(os.path.join(d, "n%d" % (i + 1), "log")) for i in range(N)]
            print("%-28s ephemeral %s; holder state %s; real time %s; members' log times %s" % (
                name, "gone after %.1f s" % gone_at if gone_at is not None else "still there",
                holder.state, time.strftime("%H:%M:%S", time.gmtime()), logs))

        phase("baseline", 0, 5)
        # A line in each log after the step: kill nothing, just ask the members to log (a new session does).
        phase("every member +%d s" % STEP, STEP, 10)
        KazooClient(hosts=hosts, timeout=2.0).start(timeout=15)  # logs "Creating new session" lines
        phase("every member -%d s" % STEP, -STEP, 10)
        phase("back to 0", 0, 5)
        holder.stop()
        watcher.stop()
    finally:
        for p in procs:
            p.kill()
            p.wait()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
