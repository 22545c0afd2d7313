"""Request parsing and response shapes: OpenAI completions/chat and SGLang's /generate."""
import itertools
import time
import uuid

from sglang._sim.engine import Request

_counter = itertools.count()


class BadRequest(ValueError):
    pass


def _prompt_tokens_of_text(text):
    return max(1, len(text) // 4)  # ~4 characters a token


def _prompt_of(kind, body):
    """(prompt token count, seed material) of a request body."""
    if kind == "chat":
        msgs = body.get("messages")
        if not isinstance(msgs, list) or not msgs:
            raise BadRequest("messages must be a non-empty list")
        text = "".join(str(m.get("content", "")) for m in msgs if isinstance(m, dict))
        return _prompt_tokens_of_text(text) + 4 * len(msgs), text
    if kind == "completion":
        prompt = body.get("prompt")
        if isinstance(prompt, list) and prompt and all(isinstance(t, int) for t in prompt):
            return len(prompt), repr(prompt)
        if isinstance(prompt, list):
            prompt = "".join(map(str, prompt))
        if not isinstance(prompt, str):
            raise BadRequest("prompt must be a string or a list of token ids")
        return _prompt_tokens_of_text(prompt), prompt
    if body.get("input_ids") is not None:
        ids = body["input_ids"]
        return len(ids), repr(ids)
    text = body.get("text")
    if not isinstance(text, str):
        raise BadRequest("Either text or input_ids should be provided.")
    return _prompt_tokens_of_text(text), text


def make_request(kind, body, sim_seed, eos_prob):
    """Build an engine Request from an OpenAI ('completion', 'chat') or native ('generate') body."""
    prompt_tokens, material = _prompt_of(kind, body)
    if kind == "generate":
        sp = body.get("sampling_params") or {}
        max_new = sp.get("max_new_tokens", 128)
        ignore_eos = bool(sp.get("ignore_eos", False))
        seed = sp.get("sampling_seed")
        temperature = sp.get("temperature", 1.0)
    else:
        max_new = body.get("max_completion_tokens") or body.get("max_tokens") or (
            16 if kind == "completion" else 2048)
        ignore_eos = bool(body.get("ignore_eos", False))
        seed = body.get("seed")
        temperature = body.get("temperature", 1.0)
    if not isinstance(max_new, int) or max_new < 0:
        raise BadRequest("max_tokens must be a non-negative integer")
    rid = uuid.uuid4().hex
    # Same server seed, prompt and request seed -> the same EOS and acceptance draws.
    material = "%s|%s|%s" % (sim_seed, seed if seed is not None else "", material)
    if seed is None and temperature:
        material += "|%d" % next(_counter)  # sampling without a seed: each request differs
    return Request(rid, prompt_tokens, max(max_new, 1), ignore_eos, material, eos_prob)


def usage(req, completion_tokens=None):
    """A usage object; completion_tokens: the running count of a stream chunk (default: now)."""
    done = req.completion_tokens if completion_tokens is None else completion_tokens
    return {"prompt_tokens": req.prompt_tokens, "total_tokens": req.prompt_tokens + done,
            "completion_tokens": done, "prompt_tokens_details": None}


def openai_chunk(kind, req, model, text, finish, first):
    created = int(time.time())
    if kind == "chat":
        delta = {"role": "assistant", "content": text} if first else {"content": text}
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish,
                  "matched_stop": None}
        obj = "chat.completion.chunk"
    else:
        choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": finish,
                  "matched_stop": None}
        obj = "text_completion"
    return {"id": req.rid, "object": obj, "created": created, "model": model,
            "choices": [choice], "usage": None}


def openai_usage_chunk(kind, req, model):
    obj = "chat.completion.chunk" if kind == "chat" else "text_completion"
    return {"id": req.rid, "object": obj, "created": int(time.time()), "model": model,
            "choices": [], "usage": usage(req)}


def openai_full(kind, req, model, text):
    if kind == "chat":
        choice = {"index": 0, "message": {"role": "assistant", "content": text, "reasoning_content": None,
                                          "tool_calls": None},
                  "logprobs": None, "finish_reason": req.finish_reason, "matched_stop": None}
        obj = "chat.completion"
    else:
        choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": req.finish_reason,
                  "matched_stop": None}
        obj = "text_completion"
    return {"id": req.rid, "object": obj, "created": int(time.time()), "model": model,
            "choices": [choice], "usage": usage(req)}


def meta_info(req, speculative, started, eos_token_id):
    if req.finish_reason == "stop":
        finish = {"type": "stop", "matched": eos_token_id}
    elif req.finish_reason == "length":
        finish = {"type": "length", "length": req.completion_tokens}
    else:
        finish = None
    meta = {"id": req.rid, "finish_reason": finish, "prompt_tokens": req.prompt_tokens,
            "completion_tokens": req.completion_tokens, "cached_tokens": 0,
            "e2e_latency": time.monotonic() - started}
    if speculative:
        meta["spec_verify_ct"] = req.spec_verify_ct
    return meta
