"""Warm-up as SGLang does it: over HTTP, /model_info, one request, /freeze_gc, then ready.

sglang/srt/entrypoints/http_server.py _execute_server_warmup: a text model gets
POST /generate; a model with image understanding POST /v1/chat/completions.
A failure logs "Initialization failed. warmup error: <traceback>" (server.py)."""
import http.client
import json
import time
import traceback


def _request(host, port, method, path, headers, body=None):
    conn = http.client.HTTPConnection(host, port, timeout=600)
    try:
        conn.request(method, path, body=body, headers=headers)
        res = conn.getresponse()
        text = res.read().decode("utf-8", "replace")
        assert res.status == 200, "res=<Response [%d]>, res.text=%r" % (res.status, text)
        return text
    finally:
        conn.close()


def run(args, seconds, fail):
    """Return None when warm, else the traceback text to log."""
    host = "127.0.0.1" if args.host in ("0.0.0.0", "") else ("::1" if args.host == "::" else args.host)
    headers = {"Content-Type": "application/json"}
    if args.api_key:
        headers["Authorization"] = "Bearer " + args.api_key
    try:
        time.sleep(seconds)  # stands in for the kernels' first-use compile time
        model_info = json.loads(_request(host, args.port, "GET", "/model_info", headers))
        if model_info.get("has_image_understanding"):
            path = "/v1/chat/completions"
            body = json.dumps({"model": args.served_model_name, "messages": [
                {"role": "user", "content": [{"type": "text", "text": "Describe the image."}]}],
                "max_tokens": 8, "stream": False, "temperature": 0.0})
        else:
            path = "/generate"
            body = json.dumps({"text": "The capital city of France is",
                               "sampling_params": {"temperature": 0, "max_new_tokens": 8}})
        if fail:
            raise AssertionError("res=<Response [500]>, res.text='{\"object\":\"error\",\"message\":"
                                 "\"Internal server error: CUDA error: an illegal memory access was "
                                 "encountered\",\"type\":\"InternalServerError\",\"code\":500}'")
        _request(host, args.port, "POST", path, headers, body)
        _request(host, args.port, "POST", "/freeze_gc", headers)
        return None
    except Exception:  # noqa: BLE001 - every warm-up failure ends the server, with its traceback
        return traceback.format_exc().rstrip()
