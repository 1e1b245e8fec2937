"""Drives scripts/api-fuzz: a depotd on a temporary folder, its Unix socket
bridged to a loopback TCP port, schemathesis run against docs/openapi.yaml
through the bridge, then the daemon stopped with SIGTERM.

Exits with schemathesis's status, or 1 when the daemon did not come up,
died, stopped answering /v1/health or did not exit 0 on SIGTERM.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
depotd, schemathesis, seconds, seed, report = sys.argv[1:6]

CONFIG = """
[daemon]
state_dir = "state"
socket = "depot.sock"
import_roots = ["inbox"]
log_level = "info"

[[store]]
name = "travel"

  [[store.entity]]
  name = "Trip"
  identifier = "id"
  indexes = [["destination"], ["startDate"]]

    [store.entity.fields]
    id = "string"
    name = "string"
    destination = "string?"
    startDate = "date"
    endDate = "date?"
    budget = "double"
    isFavorite = "bool"
    notes = "string?"

# A store with relationships (issue 31): saves, one record's writes and
# delete rules across entities.
[[store]]
name = "shop"

  [[store.entity]]
  name = "Customer"
  identifier = "id"
  history = "values"

    [store.entity.fields]
    id = "string"
    name = "string"
    country = "string?"

    [store.entity.relationships]
    orders = { to = "Order", inverse = "customer", delete = "cascade" }

  [[store.entity]]
  name = "Order"
  identifier = "id"

    [store.entity.fields]
    id = "string"
    total = "double"

    [store.entity.relationships]
    customer = { to = "Customer" }
"""


def unix_request(path, method, target, body=b"", content_type="application/json"):
    """One HTTP/1.1 request on the Unix socket; returns (status, body)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(30)
    s.connect(path)
    head = (f"{method} {target} HTTP/1.1\r\nHost: depot\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
    s.sendall(head + body)
    data = b""
    while chunk := s.recv(65536):
        data += chunk
    s.close()
    status = int(data.split(b" ", 2)[1])
    return status, data.split(b"\r\n\r\n", 1)[1]


def pump(source, target):
    try:
        while data := source.recv(65536):
            target.sendall(data)
    except OSError:
        pass
    finally:
        for s in (source, target):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def bridge(listener, unix_path):
    """Each TCP connection gets its own connection to the daemon's socket."""
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            return
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        upstream.connect(unix_path)
        threading.Thread(target=pump, args=(client, upstream), daemon=True).start()
        threading.Thread(target=pump, args=(upstream, client), daemon=True).start()


def main():
    folder = tempfile.mkdtemp(prefix="depot-api-fuzz-")
    os.makedirs(os.path.join(folder, "inbox"))
    with open(os.path.join(folder, "depot.toml"), "w") as f:
        f.write(CONFIG)
    # READY=1 on NOTIFY_SOCKET tells when the daemon serves: no guessing.
    notify_path = os.path.join(folder, "notify.sock")
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(notify_path)
    notify.settimeout(120)
    log = open(os.path.join(folder, "depotd.log"), "w")
    daemon = subprocess.Popen([depotd, "--config", os.path.join(folder, "depot.toml")],
                              env={**os.environ, "NOTIFY_SOCKET": notify_path}, stderr=log, cwd=folder)
    try:
        while b"READY=1" not in notify.recv(4096):
            pass
    except socket.timeout:
        print("api-fuzz: depotd did not become ready; its log:", open(log.name).read(), file=sys.stderr)
        daemon.kill()
        return 1
    unix_path = os.path.join(folder, "depot.sock")
    # Some records, so that fetches, aggregates and history have something.
    rows = ["id,name,destination,startDate,budget,isFavorite"]
    rows += [f"t{i},Trip {i},City {i % 7},2025-03-{10 + i % 18},{i * 10.5},{str(i % 2 == 0).lower()}"
             for i in range(50)]
    status, body = unix_request(unix_path, "POST", "/v1/stores/travel/entities/Trip/import?format=csv",
                                ("\n".join(rows) + "\n").encode(), "text/csv")
    assert status == 202, (status, body)
    job = json.loads(body)["id"]
    status, body = unix_request(unix_path, "GET", f"/v1/jobs/{job}/events")
    assert b'"succeeded"' in body, body
    status, body = unix_request(
        unix_path, "POST", "/v1/stores/shop/save",
        json.dumps({"changes": [{"insert": "Customer", "record": {"id": f"C{i}", "name": f"C {i}", "country": "GB"}}
                                for i in range(5)]
                    + [{"insert": "Order", "record": {"id": f"O{i}", "total": i * 2.5, "customer": f"C{i % 5}"}}
                       for i in range(10)]}).encode())
    assert status == 200, (status, body)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    port = listener.getsockname()[1]
    threading.Thread(target=bridge, args=(listener, unix_path), daemon=True).start()
    command = [schemathesis, "run", os.path.join(root, "docs/openapi.yaml"),
               "--url", f"http://127.0.0.1:{port}", "--checks", "all", "--seed", seed,
               # One worker: with two, hypothesis parses lambdas' sources
               # in two threads at once, which CPython 3.11 can fail with a
               # spurious "SystemError: AST constructor recursion depth
               # mismatch" (python/cpython#106905), a red run that is no
               # finding (seen once in a fresh-clone CI run, 2026-11-25).
               "--max-time", seconds, "--request-timeout", "10", "--workers", "1",
               "--report", "junit", "--report-junit-path", report,
               # DELETE /v1/jobs/{id} cancels a job, which stays listed with
               # its final state (DESIGN §5): not a deletion.
               # ST302 runs as api_fuzz_hooks.created_resource_available,
               # which leaves out a 404 about an entity the body names;
               # ST201 as api_fuzz_hooks.invalid_data_refused, which counts
               # a 413 (a body over the limit) as a refusal.
               "--exclude-checks", "use_after_free,ensure_resource_availability,negative_data_rejection",
               # Streams without an end: /v1/events, live fetches and
               # history follows are left out (hooks drop their requests).
               "--exclude-path", "/v1/events"]
    env = {**os.environ, "SCHEMATHESIS_HOOKS": "api_fuzz_hooks",
           "PYTHONPATH": os.path.join(root, "scripts") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    result = subprocess.run(command, cwd=root, env=env).returncode
    failed = False
    if daemon.poll() is not None:
        print(f"api-fuzz: depotd died during the run (status {daemon.returncode})", file=sys.stderr)
        failed = True
    else:
        status, _ = unix_request(unix_path, "GET", "/v1/health")
        if status != 200:
            print(f"api-fuzz: /v1/health answers {status} after the run", file=sys.stderr)
            failed = True
        daemon.send_signal(signal.SIGTERM)
        if daemon.wait(timeout=60) != 0:
            print(f"api-fuzz: depotd exited {daemon.returncode} on SIGTERM", file=sys.stderr)
            failed = True
    listener.close()
    log.close()
    if failed:
        print("api-fuzz: the daemon's log:", open(log.name).read()[-4000:], file=sys.stderr)
    if failed or result != 0:
        print(f"api-fuzz: the daemon's folder is kept for a look: {folder}", file=sys.stderr)
        return 1 if failed else result
    # A passing run leaves nothing behind in /tmp.
    shutil.rmtree(folder, ignore_errors=True)
    return result


sys.exit(main())
