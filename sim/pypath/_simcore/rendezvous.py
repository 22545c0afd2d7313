"""torch.distributed's TCP rendezvous between simulated hosts, and SGLang's dummy health server.

Rank 0 listens on the rendezvous port (SGLang: --dist-init-addr HOST:PORT, sglang/srt/distributed/
bootstrap.py _resolve_dist_init_method gives torch tcp://HOST:PORT; vLLM: --master-addr/--master-port)
and waits for the other nodes; each other node connects, retrying until the timeout (--dist-timeout /
--distributed-timeout-seconds, else torch's default). Both sides fail as torch's TCPStore does, with
its wording (torch/csrc/distributed/c10d: the server "Timed out after N seconds waiting for clients.
K/N clients joined."; a client "The client socket has timed out after Nms while trying to connect to
(HOST, PORT)."; torch is not in this environment, so these are quoted from its messages, not read).

There is no heartbeat after the rendezvous: the engines have none either (a dead node is seen by its
peers only when a collective fails, and by no one while idle).
"""
import http.server
import socket
import threading
import time

# torch's default process-group timeout for NCCL (10 minutes; quoted, not read: torch is not here),
# used when the command line gives none.
DEFAULT_TIMEOUT_S = 600.0
RETRY_EVERY_S = 0.1


class DistStoreError(RuntimeError):
    """Printed as `torch.distributed.DistStoreError: ...` (the module name is what prints)."""


class DistNetworkError(RuntimeError):
    """Printed as `torch.distributed.DistNetworkError: ...`."""


DistStoreError.__module__ = "torch.distributed"
DistNetworkError.__module__ = "torch.distributed"


def serve(host, port, nnodes, timeout):
    """Rank 0: listen on HOST:PORT until the other NNODES - 1 nodes have joined; DistStoreError after
    TIMEOUT seconds. Returns the ranks that joined, the listening socket kept open for the caller."""
    listener = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    listener.listen(nnodes)
    deadline = time.monotonic() + timeout
    joined = {}
    while len(joined) < nnodes - 1:
        left = deadline - time.monotonic()
        if left <= 0:
            listener.close()
            raise DistStoreError("Timed out after %d seconds waiting for clients. %d/%d clients joined."
                                 % (round(timeout), len(joined) + 1, nnodes))
        listener.settimeout(min(left, 0.5))
        try:
            conn, unused = listener.accept()
        except socket.timeout:
            continue
        with conn:
            conn.settimeout(2.0)
            try:
                rank = int(conn.recv(64).decode().strip() or -1)
            except (OSError, ValueError):
                continue
            joined[rank] = True
            conn.sendall(b"ok\n")
    return sorted(joined), listener


def join(host, port, rank, timeout):
    """Rank >= 1: connect to rank 0 at HOST:PORT, retrying until TIMEOUT seconds; DistNetworkError then."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((host, port), timeout=2.0) as conn:
                conn.sendall(b"%d\n" % rank)
                if conn.recv(16).startswith(b"ok"):
                    return
        except OSError:
            pass
        if time.monotonic() >= deadline:
            raise DistNetworkError("The client socket has timed out after %dms while trying to connect to (%s, %d)."
                                   % (round(timeout * 1000), host, port))
        time.sleep(RETRY_EVERY_S)


def meet(host, port, rank, nnodes, timeout):
    """This node's side of the rendezvous: rank 0 serves it (returns its listener, to keep open while
    the server runs), the others join (return None)."""
    if rank == 0:
        return serve(host, port, nnodes, timeout)[1]
    join(host, port, rank, timeout)
    return None


class _DummyHealth(http.server.BaseHTTPRequestHandler):
    """SGLang 0.5.23 launch_dummy_health_check_server (srt/utils/common.py): /ping, /health and
    /health_generate answer 200 whatever the node's schedulers do; anything else 404 (FastAPI's)."""

    def do_GET(self):  # noqa: N802 - http.server's name
        path = self.path.split("?")[0]
        code = 200 if path in ("/ping", "/health", "/health_generate") else 404
        body = b"" if code == 200 else b'{"detail":"Not Found"}'
        self.send_response(code)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *unused):  # log_level="warning" in the real uvicorn.Config: no access log
        pass


def host_port(host, port):
    """HOST:PORT, an IPv6 address in brackets."""
    return "[%s]:%d" % (host, port) if ":" in host else "%s:%d" % (host, port)


def dummy_health_server(host, port, log):
    """Start the dummy health server in a daemon thread, logging as SGLang does."""
    server = http.server.ThreadingHTTPServer((host, port), _DummyHealth)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="health-check-server", daemon=True).start()
    log.info("Dummy health check server started in background thread at %s", host_port(host, port))
    return server


def split_host_port(addr):
    """HOST:PORT or [V6]:PORT -> (host, port) (SGLang's NetworkAddress.parse, srt/utils/network.py)."""
    if addr.startswith("["):
        host, rest = addr[1:].split("]", 1)
        return host, int(rest.lstrip(":"))
    host, port = addr.rsplit(":", 1)
    return host, int(port)
