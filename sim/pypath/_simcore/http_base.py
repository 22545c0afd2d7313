"""HTTP plumbing every simulated server shares: SGLang's and vLLM's front doors are FastAPI
apps on uvicorn, so the wire (server header, chunked writes, SSE streams as
starlette's StreamingResponse sends them, access lines) is the same; routes, authorization
and response bodies stay each engine's own."""
import json
import socket
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def dumps(obj):
    return json.dumps(obj, separators=(",", ":")).encode()


def token_events(req):
    """(text, running completion_tokens, finished) for each engine event of req."""
    count = 0
    for texts, finished in iter(req.events.get, None):
        count += len(texts)
        # An EOS token counts in usage but has no text: the final count is the engine's.
        yield "".join(texts), (req.completion_tokens if finished else count), finished
        if finished:
            return


class Server(ThreadingHTTPServer):
    """One handler thread a connection (HTTP/1.1 keep-alive); bound and activated by the
    engine's own start-up, which decides when its port opens. HANDLER: the engine's class."""

    daemon_threads = True
    allow_reuse_address = True  # uvicorn sets SO_REUSEADDR too
    request_queue_size = 1024
    handler = None

    def __init__(self, address, app):
        self.app = app
        super().__init__(address, self.handler, bind_and_activate=False)


class UvicornHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "uvicorn"
    sys_version = ""

    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, fmt, *args):
        pass  # access lines are written by _access()

    def access_log(self, line):
        """Write uvicorn's access line the engine's way (each simulator's logs.uvicorn)."""
        raise NotImplementedError

    def _answer(self, engine, req, stream, full):
        """Submit REQ to ENGINE; stream() writes a streamed answer, else full(text) is the JSON
        one. A client gone mid-answer aborts the request (the engine drops it)."""
        engine.submit(req)
        try:
            if req.streaming:
                stream()
            else:
                self._json(200, full("".join(t for t, _c, _f in token_events(req))))
        except (BrokenPipeError, ConnectionResetError):
            req.aborted = True

    def _read_body(self):
        """The request's body bytes (Content-Length; none without it)."""
        n = int(self.headers.get("content-length") or 0)
        return self.rfile.read(n) if n else b""

    def _bearer(self):
        """The token of an `Authorization: Bearer TOKEN` header, or None."""
        scheme, unused, token = (self.headers.get("Authorization") or "").partition(" ")
        return token if scheme.lower() == "bearer" else None

    def _key_ok(self, guarded, keys):
        """Whether the request may go on: the path is not GUARDED, the server has no KEYS, or the
        bearer token is one of them; otherwise the 401 is sent (False)."""
        if not guarded or not keys or self._bearer() in keys:
            return True
        return self._unauthorized()

    def _unauthorized(self):
        """401 {"error": "Unauthorized"}, as both engines' API-key middleware answers; False."""
        self.close_connection = True  # the unread body must not be taken for a request
        self._json(401, {"error": "Unauthorized"})
        return False

    def _access(self, code):
        self.access_log('%s:%d - "%s %s HTTP/1.1" %d %s' % (
            self.client_address[0], self.client_address[1], self.command, self.path, code,
            HTTPStatus(code).phrase))

    def _send(self, code, body=b"", ctype="application/json"):
        self.send_response_only(code)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        # uvicorn writes its access line when the response starts (httptools_impl.py, send on
        # http.response.start), so a client that has the whole response never precedes it in the log.
        self._access(code)
        self.wfile.write(body)

    def _json(self, code, obj):
        self._send(code, dumps(obj))

    def _stream_start(self):
        """The head of an SSE response (chunked, as uvicorn sends a StreamingResponse)."""
        self.send_response_only(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()

    def _sse(self, obj):
        """One `data: ...` event in its own chunk; obj: a JSON-able object or raw bytes."""
        data = b"data: " + (obj if isinstance(obj, bytes) else dumps(obj)) + b"\n\n"
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def _stream_end(self):
        """`data: [DONE]`, the last (empty) chunk and the access line."""
        self._sse(b"[DONE]")
        self.wfile.write(b"0\r\n\r\n")
        self._access(200)
