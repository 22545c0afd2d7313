"""Request parsing and response shapes: OpenAI completions/chat and SGLang's /generate."""
import itertools
import time
import uuid

from sglang._sim import text as textmod
from sglang._sim.engine import Request

_counter = itertools.count()


class BadRequest(ValueError):
    pass


def _content_text(content):
    """A message's text: a string, or the text parts of a list of content parts."""
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def _prompt_of(kind, body):
    """(prompt token count, seed material, prompt text or None for token ids) of a request body."""
    if kind == "chat":
        msgs = body.get("messages")
        if not isinstance(msgs, list) or not msgs:
            raise BadRequest("messages must be a non-empty list")
        contents = [_content_text(m.get("content")) for m in msgs if isinstance(m, dict)]
        return textmod.chat_prompt_tokens(contents), "".join(contents), "\n".join(contents)
    if kind == "completion":
        prompt = body.get("prompt")
        if isinstance(prompt, list) and prompt and all(isinstance(t, int) for t in prompt):
            return len(prompt), repr(prompt), None
        if isinstance(prompt, list):
            prompt = "".join(map(str, prompt))
        if not isinstance(prompt, str):
            raise BadRequest("prompt must be a string or a list of token ids")
        return textmod.prompt_tokens(prompt), prompt, prompt
    if body.get("input_ids") is not None:
        ids = body["input_ids"]
        return len(ids), repr(ids), None
    text = body.get("text")
    if not isinstance(text, str):
        raise BadRequest("Either text or input_ids should be provided.")
    return textmod.prompt_tokens(text), text, text


def make_request(kind, body, sim_seed, eos_prob):
    """Build an engine Request from an OpenAI ('completion', 'chat') or native ('generate') body."""
    prompt_tokens, material, prompt_text = _prompt_of(kind, body)
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
    return Request(rid, prompt_tokens, max(max_new, 1), ignore_eos, material, eos_prob,
                   accept_score=textmod.predictability(prompt_text))


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


def openai_full(kind, req, model, text, spec_details=None):
    if kind == "chat":
        choice = {"index": 0, "message": {"role": "assistant", "content": text, "reasoning_content": None,
                                          "tool_calls": None},
                  "logprobs": None, "finish_reason": req.finish_reason, "matched_stop": None}
        obj = "chat.completion"
    else:
        choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": req.finish_reason,
                  "matched_stop": None}
        obj = "text_completion"
    out = {"id": req.rid, "object": obj, "created": int(time.time()), "model": model,
           "choices": [choice], "usage": usage(req)}
    if spec_details is not None:  # protocol.py SglExt, at response level; None fields dropped
        out["sglext"] = {"spec_tokens_details": spec_details}
    return out


def openai_sglext_chunk(kind, req, model, spec_details):
    """The stream chunk after the last content chunk and before the usage chunk, with the
    request's sglext (serving_completions.py / serving_chat.py: choices [], usage null)."""
    obj = "chat.completion.chunk" if kind == "chat" else "text_completion"
    return {"id": req.rid, "object": obj, "created": int(time.time()), "model": model,
            "choices": [], "usage": None, "sglext": {"spec_tokens_details": spec_details}}


def spec_meta(req, draft_tokens):
    """The speculative fields of a request's meta_info, as 0.5.23's tokenizer_manager.py
    _calculate_spec_decoding_metrics adds them (none before the first verify step)."""
    if not req.spec_verify_ct or draft_tokens < 2:
        return {}
    proposed = req.spec_verify_ct * (draft_tokens - 1)
    meta = {"spec_accept_rate": req.spec_num_correct_drafts / proposed,
            "spec_accept_length": req.completion_tokens / req.spec_verify_ct,
            "spec_num_correct_drafts": req.spec_num_correct_drafts,
            "spec_num_proposed_drafts": proposed,
            "spec_verify_ct": req.spec_verify_ct}
    if req.spec_correct_drafts_histogram:
        meta["spec_correct_drafts_histogram"] = list(req.spec_correct_drafts_histogram)
    return meta


def spec_tokens_details(req, draft_tokens):
    """sglext.spec_tokens_details of an OpenAI response (return_spec_tokens_details), or None:
    protocol.py SpecTokensDetails, every field with its default, filled by utils.py
    spec_tokens_details_from_meta_info. The simulator has no cap or block accept (0.0)."""
    meta = spec_meta(req, draft_tokens)
    if not meta:
        return None
    return {"spec_accept_rate": meta["spec_accept_rate"], "spec_accept_length": meta["spec_accept_length"],
            "spec_cap_length": 0.0, "spec_block_accept_length": 0.0,
            "spec_num_correct_drafts": meta["spec_num_correct_drafts"],
            "spec_num_proposed_drafts": meta["spec_num_proposed_drafts"],
            "spec_verify_ct": meta["spec_verify_ct"],
            "spec_correct_drafts_histogram": meta.get("spec_correct_drafts_histogram", []),
            "spec_cap_lens_histogram": []}


def meta_info(req, speculative, started, eos_token_id, draft_tokens=0):
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
        meta.update(spec_meta(req, draft_tokens))
    return meta
