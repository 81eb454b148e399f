#!/usr/bin/env python3
"""API latency under SSE load: starts `dbstreams serve` in a temp folder, opens N concurrent
SSE clients on /api/v1/logs/stream, then measures GET /api/v1/streams latency (p50/p99).
  bench/api_sse_bench.py [--dbstreams build/release/apps/dbstreams] [--clients 200] [--requests 500]
"""
import argparse, http.client, os, re, shutil, signal, socket, statistics, subprocess, sys, tempfile, time

ap = argparse.ArgumentParser()
ap.add_argument("--dbstreams", default="build/release/apps/dbstreams")
ap.add_argument("--clients", type=int, default=200)
ap.add_argument("--requests", type=int, default=500)
a = ap.parse_args()

data = tempfile.mkdtemp(prefix="dbs-sse-bench-")
proc = subprocess.Popen([a.dbstreams, "serve", "--data-dir", data, "--nats-port", "0", "--port", "0",
                         "--log-level", "warn"], stdout=subprocess.PIPE, text=True)
url = key = None
deadline = time.time() + 60
while time.time() < deadline and (url is None or key is None):
    line = proc.stdout.readline()
    if not line:
        break
    m = re.search(r"API:\s+http://([\d.]+):(\d+)", line)
    if m: url = (m.group(1), int(m.group(2)))
    m = re.search(r"first API key.*: (\S+)", line)
    if m: key = m.group(1)
if url is None or key is None:
    proc.kill(); sys.exit("serve did not print its URL and key")
try:
    socks = []
    req = ("GET /api/v1/logs/stream HTTP/1.1\r\nHost: x\r\nX-API-Key: %s\r\n"
           "Accept: text/event-stream\r\n\r\n" % key).encode()
    for _ in range(a.clients):
        s = socket.create_connection(url, timeout=10)
        s.sendall(req)
        socks.append(s)
    ok = 0
    for s in socks:
        if b"200" in s.recv(4096).split(b"\r\n")[0]: ok += 1
    print(f"SSE clients connected: {ok}/{a.clients}")
    lat = []
    conn = http.client.HTTPConnection(*url, timeout=10)
    for _ in range(a.requests):
        t = time.perf_counter()
        conn.request("GET", "/api/v1/streams", headers={"X-API-Key": key})
        r = conn.getresponse(); r.read()
        if r.status != 200: sys.exit(f"status {r.status}")
        lat.append((time.perf_counter() - t) * 1000)
    lat.sort()
    p50 = lat[len(lat) // 2]; p99 = lat[int(len(lat) * 0.99) - 1]
    print(f"GET /api/v1/streams with {ok} SSE clients open: n={len(lat)} p50={p50:.2f} ms "
          f"p99={p99:.2f} ms max={lat[-1]:.2f} ms")
    for s in socks: s.close()
finally:
    proc.send_signal(signal.SIGTERM)
    try: proc.wait(20)
    except subprocess.TimeoutExpired: proc.kill()
    shutil.rmtree(data, ignore_errors=True)
