"""vLLM 0.33.0's HTTP routes on a stdlib ThreadingHTTPServer (HTTP/1.1, keep-alive, SSE streams).

Routes: /health (vllm/entrypoints/serve/instrumentator/health.py: 200, 503 once the engine is
dead), /version, /v1/models (entrypoints/openai/models/serving.py, ModelCard owned_by "vllm"),
/v1/completions and /v1/chat/completions (stream or not), /metrics (always on, metrics.py).
The API key guards the paths under GUARDED_PREFIX only (entrypoints/serve/middleware/
authenticate.py): 401 {"error": "Unauthorized"}. Requests, usage and token pacing come from
the neutral core (_simcore/prompts.py, engine.py).
"""
import json
import time
import uuid

from _simcore import http_base, prompts

from vllm import __version__
from vllm._sim import logs, metrics

GUARDED_PREFIX = ("/v1", "/v2", "/inference", "/cohere")  # authenticate.py


def _usage(req, count=None):
    return prompts.usage(req, count)  # vllm/entrypoints/openai/engine/protocol.py UsageInfo


class Handler(http_base.UvicornHandler):
    def access_log(self, line):
        logs.uvicorn(line)

    def _authorized(self, path):
        return self._key_ok(path.startswith(GUARDED_PREFIX), self.server.app.args.api_keys)

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
        raw = self._read_body()
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
            req = prompts.make_request(kind, body, app.args.sim_seed, app.args.sim_eos_prob)
        except (ValueError, prompts.BadRequest) as exc:
            return self._json(400, {"error": {"message": str(exc), "type": "BadRequestError",
                                              "param": None, "code": 400}})
        req.streaming = bool(body.get("stream"))
        req.rid = ("chatcmpl-" if kind == "chat" else "cmpl-") + uuid.uuid4().hex
        model = body.get("model") or app.args.served_names[0]
        if app.draining.is_set():
            # core.py _reject_add_in_shutdown: aborted at once, finish_reason "abort"
            req.finish_reason = "abort"
            req.events.put(([], True))
            if req.streaming:
                self._stream(kind, req, body, model)
            else:
                self._json(200, self._full(kind, req, model, ""))
            return None
        self._answer(app.engine, req, lambda: self._stream(kind, req, body, model),
                     lambda text: self._full(kind, req, model, text))
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

    def _stream(self, kind, req, body, model):
        """SSE as vLLM's serving_completion.py / serving_chat.py send it: chunks without a usage
        key unless stream_options.include_usage (then a last chunk with "choices": [] and the
        usage) and continuous_usage_stats (then the running usage on every chunk)."""
        self._stream_start()
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
            self._sse(first)
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
            self._sse(chunk)
        if include_usage:
            self._sse({"id": req.rid, "object": obj, "created": created, "model": model, "choices": [],
                       "usage": _usage(req)})
        self._stream_end()


class Server(http_base.Server):
    handler = Handler
