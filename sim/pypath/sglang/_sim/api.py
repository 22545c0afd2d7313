"""SGLang's response shapes (OpenAI completions/chat, its /generate and sglext) and its native
/generate request; OpenAI request bodies are the core's (_simcore.prompts)."""
import time

from _simcore import prompts
from _simcore import text as textmod
from _simcore.prompts import BadRequest, usage  # noqa: F401 - the HTTP layer reads them here


def _native_prompt(body):
    """/generate's prompt (io_struct.py GenerateReqInput): input_ids or text."""
    if body.get("input_ids") is not None:
        ids = body["input_ids"]
        return len(ids), repr(ids), None
    text = body.get("text")
    if not isinstance(text, str):
        raise BadRequest("Either text or input_ids should be provided.")
    return textmod.prompt_tokens(text), text, text


def make_request(kind, body, sim_seed, eos_prob):
    """Build an engine Request from an OpenAI ('completion', 'chat') or native ('generate') body."""
    if kind != "generate":
        return prompts.make_request(kind, body, sim_seed, eos_prob)
    sp = body.get("sampling_params") or {}
    return prompts.new_request(_native_prompt(body), sp.get("max_new_tokens", 128),
                               bool(sp.get("ignore_eos", False)), sp.get("sampling_seed"),
                               sp.get("temperature", 1.0), sim_seed, eos_prob)


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
