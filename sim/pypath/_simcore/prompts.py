"""OpenAI request bodies (/v1/completions, /v1/chat/completions) into engine Requests.

Both engines serve the OpenAI protocol with the same request fields (SGLang:
sglang/srt/entrypoints/openai/protocol.py; vLLM: vllm/entrypoints/openai/completion/protocol.py
and chat_completion/protocol.py): `prompt` (text, a list of texts or token ids) or
`messages`; max_tokens (max_completion_tokens for chat wins), default 16 for a completion;
`ignore_eos`, `seed`, `temperature`. An engine's native request (SGLang's /generate) builds
its Request with new_request.
"""
import itertools
import uuid

from _simcore import text as textmod
from _simcore.engine import Request

_counter = itertools.count()
CHAT_DEFAULT_MAX_TOKENS = 2048  # the imitation's cap for a chat request without max_tokens


class BadRequest(ValueError):
    pass


def _content_text(content):
    """A message's text: a string, or the text parts of a list of content parts."""
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def prompt_of(kind, body):
    """(prompt token count, seed material, prompt text or None for token ids) of an OpenAI
    body; kind: "chat" or "completion"."""
    if kind == "chat":
        msgs = body.get("messages")
        if not isinstance(msgs, list) or not msgs:
            raise BadRequest("messages must be a non-empty list")
        contents = [_content_text(m.get("content")) for m in msgs if isinstance(m, dict)]
        return textmod.chat_prompt_tokens(contents), "".join(contents), "\n".join(contents)
    prompt = body.get("prompt")
    if isinstance(prompt, list) and prompt and all(isinstance(t, int) for t in prompt):
        return len(prompt), repr(prompt), None
    if isinstance(prompt, list):
        prompt = "".join(map(str, prompt))
    if not isinstance(prompt, str):
        raise BadRequest("prompt must be a string or a list of token ids")
    return textmod.prompt_tokens(prompt), prompt, prompt


def new_request(prompt, max_new, ignore_eos, seed, temperature, sim_seed, eos_prob):
    """An engine Request; prompt: prompt_of's triple."""
    prompt_tokens, material, prompt_text = prompt
    if not isinstance(max_new, int) or max_new < 0:
        raise BadRequest("max_tokens must be a non-negative integer")
    rid = uuid.uuid4().hex
    # Same server seed, prompt and request seed -> the same EOS and acceptance draws.
    material = "%s|%s|%s" % (sim_seed, seed if seed is not None else "", material)
    if seed is None and temperature:
        material += "|%d" % next(_counter)  # sampling without a seed: each request differs
    return Request(rid, prompt_tokens, max(max_new, 1), ignore_eos, material, eos_prob,
                   accept_score=textmod.predictability(prompt_text))


def make_request(kind, body, sim_seed, eos_prob):
    """An engine Request from an OpenAI body; kind: "completion" or "chat"."""
    prompt = prompt_of(kind, body)
    max_new = body.get("max_completion_tokens") or body.get("max_tokens") or (
        16 if kind == "completion" else CHAT_DEFAULT_MAX_TOKENS)
    return new_request(prompt, max_new, bool(body.get("ignore_eos", False)), body.get("seed"),
                       body.get("temperature", 1.0), sim_seed, eos_prob)


def usage(req, completion_tokens=None):
    """An OpenAI usage object (both engines' UsageInfo); completion_tokens: the running count
    of a stream chunk (default: the request's count now)."""
    done = req.completion_tokens if completion_tokens is None else completion_tokens
    return {"prompt_tokens": req.prompt_tokens, "total_tokens": req.prompt_tokens + done,
            "completion_tokens": done, "prompt_tokens_details": None}
