"""The HTTP server: SGLang's endpoints on a stdlib ThreadingHTTPServer (HTTP/1.1, keep-alive).

Streams use chunked transfer encoding and SSE lines (`data: {...}\\n\\n`, `data: [DONE]`)
as uvicorn/FastAPI send them. One handler thread a connection; tokens come from the engine.
"""
import json
import queue
import time
import urllib.parse

from _simcore import http_base

from sglang._sim import api, loads, logs, metrics

HEALTH_TIMEOUT_S = 20.0  # HEALTH_CHECK_TIMEOUT: health_generate waits this long for one token
# Always open, key or not (sglang/srt/utils/auth.py decide_request_auth).
OPEN_PREFIXES = ("/health", "/ready", "/metrics")


class Handler(http_base.UvicornHandler):
    # --- plumbing -------------------------------------------------------------------
    def access_log(self, line):
        logs.uvicorn(line)

    def _body(self):
        raw = self._read_body()
        try:
            return json.loads(raw or b"{}")
        except ValueError:
            raise api.BadRequest("request body is not valid JSON") from None

    def _authorized(self):
        key = self.server.app.args.api_key
        return self._key_ok(not self.path.startswith(OPEN_PREFIXES), [key] if key else [])

    # --- routing --------------------------------------------------------------------
    def do_GET(self):
        if not self._authorized():
            return
        app = self.server.app
        path = self.path.split("?", 1)[0]
        if path in ("/health", "/health_generate"):
            return self._health()
        if path == "/ready":  # http_server.py ready(): tokenizer_manager.is_ready()
            return self._send(200 if app.ready.is_set() and not app.draining.is_set() else 503)
        if path in ("/model_info", "/get_model_info"):
            return self._json(200, app.model_info())
        if path in ("/server_info", "/get_server_info"):
            if path == "/get_server_info":
                logs.get().warning("Endpoint '/get_server_info' is deprecated and will be removed in a "
                                   "future version. Please use '/server_info' instead.")
            return self._json(200, app.server_info())
        if path == "/v1/models":
            return self._json(200, app.models_list())
        if path == "/v1/loads":
            status, ctype, body = loads.answer(app, dict(urllib.parse.parse_qsl(self.path.partition("?")[2])))
            return self._send(status, body.encode() if isinstance(body, str) else http_base.dumps(body), ctype)
        if path == "/metrics" and app.args.enable_metrics:
            text = metrics.render(app.engine.stats, app.args.served_model_name, app.draft_tokens(),
                                  app.args.tp_size)
            return self._send(200, text.encode(), "text/plain; version=0.0.4; charset=utf-8")
        self._json(404, {"detail": "Not Found"})

    def do_POST(self):
        if not self._authorized():
            return
        path = self.path.split("?", 1)[0]
        kind = {"/v1/completions": "completion", "/v1/chat/completions": "chat",
                "/generate": "generate"}.get(path)
        if path == "/freeze_gc":  # the post-warm-up call (http_server.py _freeze_gc_after_server_warmup)
            self._body()
            return self._json(200, {"success": True})
        if kind is None:
            self._body()
            return self._json(404, {"detail": "Not Found"})
        app = self.server.app
        try:
            body = self._body()  # accepted while draining too, as 0.5.23 does (shutdown.py)
            req = api.make_request(kind, body, app.args.sim_seed, app.args.sim_eos_prob)
            req.streaming = bool(body.get("stream"))
        except api.BadRequest as exc:
            return self._json(400, {"object": "error", "message": str(exc), "type": "BadRequestError",
                                    "param": None, "code": 400})
        started = time.monotonic()
        app.engine.submit(req)
        try:
            if body.get("stream"):
                self._stream(kind, req, body, started)
            else:
                self._complete(kind, req, body, started)
        except (BrokenPipeError, ConnectionResetError):
            req.aborted = True

    # --- endpoints ------------------------------------------------------------------
    def _health(self):
        """http_server.py health_generate: 503 while starting and during a graceful exit;
        else one generated token within HEALTH_CHECK_TIMEOUT (generation is on by default)."""
        app = self.server.app
        if app.draining.is_set():
            logs.get().info("Health check request received during shutdown. Returning 503.")
            return self._send(503)
        if not app.ready.is_set():
            return self._send(503)
        if app.args.sim_sick_drafter and app.speculative() and app.healthy_once.is_set():
            return self._send(503)
        req = api.make_request("generate", {"text": "health", "sampling_params": {"max_new_tokens": 1}},
                               0, 0.0)
        req.log_metrics = False  # GenerateReqInput(..., log_metrics=False)
        app.engine.submit(req)
        try:
            req.events.get(timeout=HEALTH_TIMEOUT_S)
        except queue.Empty:
            req.aborted = True
            return self._send(503)
        app.healthy_once.set()
        self._send(200)

    def _events(self, req):
        while True:
            texts, finished = req.events.get()
            yield "".join(texts), finished
            if finished:
                return

    def _spec_details(self, kind, req, body):
        """sglext.spec_tokens_details when the request asked (return_spec_tokens_details,
        protocol.py CompletionRequest / ChatCompletionRequest) and speculation ran."""
        if kind == "generate" or not body.get("return_spec_tokens_details"):
            return None
        return api.spec_tokens_details(req, self.server.app.draft_tokens())

    def _complete(self, kind, req, body, started):
        text = "".join(t for t, unused in self._events(req))
        app = self.server.app
        if kind == "generate":
            return self._json(200, {"text": text, "meta_info": api.meta_info(
                req, app.speculative(), started, app.target.eos_token_id, app.draft_tokens())})
        self._json(200, api.openai_full(kind, req, app.args.served_model_name, text,
                                        self._spec_details(kind, req, body)))

    def _stream(self, kind, req, body, started):
        app = self.server.app
        self._stream_start()
        model = app.args.served_model_name
        opts = body.get("stream_options") or {}
        include_usage = bool(opts.get("include_usage"))
        # As 0.5.23 srt/entrypoints/openai/utils.py should_include_usage: with stream_options,
        # continuous_usage_stats puts the running usage on every chunk (serving_completions.py,
        # serving_chat.py); without it, content chunks carry "usage": null.
        continuous = bool(opts.get("continuous_usage_stats"))
        first, so_far = True, []
        for text, count, finished in http_base.token_events(req):
            if kind == "generate":
                so_far.append(text)  # SGLang's native stream sends the text so far
                obj = {"text": "".join(so_far), "meta_info": api.meta_info(
                    req, app.speculative(), started, app.target.eos_token_id, app.draft_tokens())}
            else:
                obj = api.openai_chunk(kind, req, model, text, req.finish_reason if finished else None, first)
                if continuous:
                    obj["usage"] = api.usage(req, count)
            self._sse(obj)
            first = False
        details = self._spec_details(kind, req, body)
        if details is not None:
            self._sse(api.openai_sglext_chunk(kind, req, model, details))
        if include_usage and kind != "generate":
            self._sse(api.openai_usage_chunk(kind, req, model))
        self._stream_end()


class Server(http_base.Server):
    handler = Handler
