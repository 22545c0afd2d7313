"""vLLM 0.33.0's HTTP routes on a stdlib ThreadingHTTPServer (HTTP/1.1, keep-alive, SSE streams).

Routes: /health (vllm/entrypoints/serve/instrumentator/health.py: 200, 503 once the engine is
dead), /version, /v1/models (entrypoints/openai/models/serving.py, ModelCard owned_by "vllm"),
/v1/completions and /v1/chat/completions (stream or not), /metrics (always on, metrics.py).
The API key guards the paths under GUARDED_PREFIX only (entrypoints/serve/middleware/
authenticate.py): 401 {"error": "Unauthorized"}. Requests and token pacing come from the
SGLang simulator (sglang/_sim/api.py, engine.py).
"""
import json
import time
import uuid
from http.server import ThreadingHTTPServer

from sglang._sim import api, http_base

from vllm import __version__
from vllm._sim import logs, metrics

GUARDED_PREFIX = ("/v1", "/v2", "/inference", "/cohere")  # authenticate.py


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 1024

    def __init__(self, address, app):
        self.app = app
        super().__init__(address, Handler, bind_and_activate=False)


def _usage(req, count=None):
    done = req.completion_tokens if count is None else count
    # vllm/entrypoints/openai/engine/protocol.py UsageInfo
    return {"prompt_tokens": req.prompt_tokens, "total_tokens": req.prompt_tokens + done,
            "completion_tokens": done, "prompt_tokens_details": None}


class Handler(http_base.UvicornHandler):
    def access_log(self, line):
        logs.uvicorn(line)

    def _authorized(self, path):
        keys = self.server.app.args.api_keys
        if not keys or not path.startswith(GUARDED_PREFIX):
            return True
        scheme, unused, param = (self.headers.get("Authorization") or "").partition(" ")
        if scheme.lower() == "bearer" and param in keys:
            return True
        self.close_connection = True
        self._json(401, {"error": "Unauthorized"})
        return False

    def do_GET(self):
        path = self.path.split("?", 1)[0]
        if not self._authorized(path):
            return None
        app = self.server.app
        if path == "/health":
            return self._send(503 if app.engine_dead.is_set() else 200, ctype="text/plain")
        if path == "/version":
            return self._json(200, {"version": __version__})
        if path == "/v1/models":
            created = int(time.time())
            return self._json(200, {"object": "list", "data": [
                {"id": name, "object": "model", "created": created, "owned_by": "vllm",
                 "root": app.args.model, "parent": None, "max_model_len": app.target.context_length,
                 "permission": []} for name in app.args.served_names]})
        if path == "/metrics":
            text = metrics.render(app)
            return self._send(200, text.encode(), "text/plain; version=0.0.4; charset=utf-8")
        return self._json(404, {"detail": "Not Found"})

    def do_POST(self):
        path = self.path.split("?", 1)[0]
        n = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(n) if n else b""
        if not self._authorized(path):
            return None
        kind = {"/v1/completions": "completion", "/v1/chat/completions": "chat"}.get(path)
        if kind is None:
            return self._json(404, {"detail": "Not Found"})
        app = self.server.app
        if app.engine_dead.is_set():
            # EngineDeadError.CLIENT_MESSAGE (vllm/v1/engine/exceptions.py)
            return self._json(500, {"error": {"message": "The server had an error while processing your "
                                              "request.", "type": "InternalServerError", "code": 500}})
        try:
            body = json.loads(raw or b"{}")
            req = api.make_request(kind, body, app.args.sim_seed, app.args.sim_eos_prob)
        except (ValueError, api.BadRequest) as exc:
            return self._json(400, {"error": {"message": str(exc), "type": "BadRequestError",
                                              "param": None, "code": 400}})
        req.streaming = bool(body.get("stream"))
        req.rid = ("chatcmpl-" if kind == "chat" else "cmpl-") + uuid.uuid4().hex
        model = body.get("model") or app.args.served_names[0]
        app.engine.submit(req)
        try:
            if req.streaming:
                self._stream(kind, req, body, model)
            else:
                text = "".join(t for t, _c, _f in http_base.token_events(req))
                self._json(200, self._full(kind, req, model, text))
        except (BrokenPipeError, ConnectionResetError):
            req.aborted = True
        return None

    @staticmethod
    def _full(kind, req, model, text):
        # entrypoints/openai/completion/protocol.py, chat_completion/protocol.py
        if kind == "chat":
            choice = {"index": 0, "message": {"role": "assistant", "content": text, "refusal": None,
                                              "tool_calls": [], "reasoning_content": None},
                      "logprobs": None, "finish_reason": req.finish_reason, "stop_reason": None}
            obj = "chat.completion"
        else:
            choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": req.finish_reason,
                      "stop_reason": None, "prompt_logprobs": None}
            obj = "text_completion"
        return {"id": req.rid, "object": obj, "created": int(time.time()), "model": model,
                "choices": [choice], "usage": _usage(req)}

    def _chunk(self, obj):
        data = b"data: " + (obj if isinstance(obj, bytes) else http_base.dumps(obj)) + b"\n\n"
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def _stream(self, kind, req, body, model):
        """SSE as vLLM's serving_completion.py / serving_chat.py send it: chunks without a usage
        key unless stream_options.include_usage (then a last chunk with "choices": [] and the
        usage) and continuous_usage_stats (then the running usage on every chunk)."""
        self.send_response_only(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        opts = body.get("stream_options") or {}
        include_usage, continuous = bool(opts.get("include_usage")), bool(opts.get("continuous_usage_stats"))
        obj = "chat.completion.chunk" if kind == "chat" else "text_completion"
        created = int(time.time())
        if kind == "chat":  # the first chat chunk carries the role only (serving_chat.py)
            first = {"id": req.rid, "object": obj, "created": created, "model": model, "choices": [
                {"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None,
                 "finish_reason": None}]}
            if include_usage and continuous:
                first["usage"] = _usage(req, 0)
            self._chunk(first)
        for text, count, finished in http_base.token_events(req):
            finish = req.finish_reason if finished else None
            if kind == "chat":
                choice = {"index": 0, "delta": {"content": text}, "logprobs": None, "finish_reason": finish}
            else:
                choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": finish,
                          "stop_reason": None}
            if finished:
                choice["stop_reason"] = None
            chunk = {"id": req.rid, "object": obj, "created": created, "model": model, "choices": [choice]}
            if include_usage and continuous:
                chunk["usage"] = _usage(req, count)
            self._chunk(chunk)
        if include_usage:
            self._chunk({"id": req.rid, "object": obj, "created": created, "model": model, "choices": [],
                         "usage": _usage(req)})
        self._chunk(b"[DONE]")
        self.wfile.write(b"0\r\n\r\n")
        self._access(200)
