"""toyserve's routes on the core's HTTP plumbing: OpenAI completions and chat (streamed or
not), /health, /version, /v1/models and /metrics. Its own response shapes: the OpenAI
fields a client reads, nothing engine-specific."""
import json
import logging
import time

from _simcore import http_base, prompts
from _simcore.prom import Exposition

from toyserve import __version__

ROUTES = {"/v1/completions": "completion", "/v1/chat/completions": "chat"}


def metrics_text(app):
    stats, labels = app.engine.stats, {"model_name": app.model_name}
    out = Exposition()
    out.counter("toyserve:generation_tokens", "Tokens generated.", [(labels, stats.generation_tokens_total)])
    out.counter("toyserve:prompt_tokens", "Prompt tokens processed.",
                [(labels, sum(row[0] for row in stats.finished.values()))])
    out.counter("toyserve:requests", "Requests finished.", [(labels, sum(stats.by_reason.values()))])
    out.gauge("toyserve:requests_running", "Requests in the running batch.", [(labels, stats.running)])
    return out.text()


class Handler(http_base.UvicornHandler):
    server_version = "toyserve"

    def access_log(self, line):
        logging.getLogger("toyserve").info("%s", line)

    def _authorized(self, path):
        key = self.server.app.args.api_key
        return self._key_ok(path.startswith("/v1"), [key] if key else [])

    def do_GET(self):
        path = self.path.split("?", 1)[0]
        if not self._authorized(path):
            return None
        app = self.server.app
        if path == "/health":
            return self._send(200 if app.ready.is_set() else 503)
        if path == "/version":
            return self._json(200, {"version": __version__})
        if path == "/v1/models":
            return self._json(200, {"object": "list", "data": [
                {"id": app.model_name, "object": "model", "owned_by": "toyserve",
                 "max_model_len": app.target.context_length}]})
        if path == "/metrics":
            return self._send(200, metrics_text(app).encode(), "text/plain; version=0.0.4; charset=utf-8")
        return self._json(404, {"detail": "Not Found"})

    def do_POST(self):
        path = self.path.split("?", 1)[0]
        raw = self._read_body()
        if not self._authorized(path):
            return None
        kind = ROUTES.get(path)
        if kind is None:
            return self._json(404, {"detail": "Not Found"})
        app = self.server.app
        try:
            body = json.loads(raw or b"{}")
            req = prompts.make_request(kind, body, 0, app.args.eos_prob)
        except (ValueError, prompts.BadRequest) as exc:
            return self._json(400, {"error": {"message": str(exc), "code": 400}})
        req.streaming = bool(body.get("stream"))
        model = body.get("model") or app.model_name
        self._answer(app.engine, req, lambda: self._stream(kind, req, body, model),
                     lambda text: _response(kind, req, model, text, req.finish_reason, final=True))
        return None

    def _stream(self, kind, req, body, model):
        opts = body.get("stream_options") or {}
        include_usage, continuous = bool(opts.get("include_usage")), bool(opts.get("continuous_usage_stats"))
        self._stream_start()
        for text, count, finished in http_base.token_events(req):
            chunk = _response(kind, req, model, text, req.finish_reason if finished else None, final=False)
            if include_usage and continuous:
                chunk["usage"] = prompts.usage(req, count)
            self._sse(chunk)
        if include_usage:
            self._sse(dict(_response(kind, req, model, "", None, final=False), choices=[], usage=prompts.usage(req)))
        self._stream_end()


def _response(kind, req, model, text, finish, final):
    """A completion (final) or a stream chunk, in the OpenAI shape."""
    if kind == "chat":
        part = {"message": {"role": "assistant", "content": text}} if final else {"delta": {"content": text}}
        obj = "chat.completion" if final else "chat.completion.chunk"
    else:
        part, obj = {"text": text}, "text_completion"
    out = {"id": req.rid, "object": obj, "created": int(time.time()), "model": model,
           "choices": [dict(part, index=0, finish_reason=finish)]}
    if final:
        out["usage"] = prompts.usage(req)
    return out


class Server(http_base.Server):
    handler = Handler
