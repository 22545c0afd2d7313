"""HTTP plumbing both simulated servers share: SGLang's and vLLM's front doors are FastAPI
apps on uvicorn, so the wire (server header, chunked writes, access lines) is the same;
routes, authorization and response bodies stay each engine's own."""
import json
import socket
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler


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

    def _access(self, code):
        self.access_log('%s:%d - "%s %s HTTP/1.1" %d %s' % (
            self.client_address[0], self.client_address[1], self.command, self.path, code,
            HTTPStatus(code).phrase))

    def _send(self, code, body=b"", ctype="application/json"):
        self.send_response_only(code)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self._access(code)

    def _json(self, code, obj):
        self._send(code, dumps(obj))
