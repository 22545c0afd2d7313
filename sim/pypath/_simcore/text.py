"""What the simulated engines read from a prompt's text: its token count and how predictable it is.

Every simulated engine uses these two models (through _simcore.prompts and the engine).
They are deterministic functions of the text, so a test can compute what the server will
report for a prompt it sends.

Prompt tokens (`prompt_tokens`). Real engines count a prompt with the model's BPE
tokenizer; there is none here. The text is cut the way tiktoken-style BPE tokenizers
(cl100k_base, o200k_base, Kimi's tiktoken.model) pre-split it, and each piece is charged
what such a tokenizer typically charges for it:

  - a word (letters, with its leading space or one punctuation mark): 1 token up to
    WORD_CHARS letters, then one more per further WORD_EXTRA letters (rounded up);
  - a run of 1-3 digits: 1 token (those tokenizers split numbers into groups of 3);
  - a run of other symbols (with its leading space): one token per SYMBOL_CHARS
    characters, rounded up;
  - a run of whitespace (newlines, indentation): 1 token.

Checked against cl100k_base and o200k_base on tests/sim/data/token_samples.json (22 texts
in the project's own words: prose, creative writing, code, JSON, math, tables, a summary
request, two translation requests): the total is 2.2% (cl100k) and 1.2% (o200k) low; on the
20 English texts one text is off by 3.6% and 3.0% on average, 11% at worst; the two
translation requests (French, German) count 21-36% low, as non-English words split into
more pieces. WORD_CHARS is 10 because common English words up to about 10 letters are one
token in both ("something", "throughput"); a length rule cannot know a rare word. The len/4
rule it replaces was 18% low in total with a mean error of 27% a text. Real tokenizers differ
from each other too (Kimi's has a larger vocabulary). tests/sim/test_sim_text.py checks the
figures.

Chat prompts add CHAT_TOKENS_PER_MESSAGE for each message's role markers (Kimi's template
wraps a message in <|im_user|>, the role, <|im_middle|> and <|im_end|>).

Acceptance (`predictability`, `accept_probability`). A drafter guesses the next tokens
best where text is regular: code, JSON and tables, numbers in sequence, repeated phrases;
it guesses worst in free prose and creative writing (EAGLE-3 paper: HumanEval accepts more
than MT-Bench). The model scores the text the engine is asked to continue, from 0 to 1:

  symbols     share of non-space characters in SYMBOLS (code and JSON structure)
  digits      share of non-space characters that are digits
  repetition  share of word/symbol bigrams (pieces as above, lower-cased, stripped) that
              already occurred earlier in the text
  score       min(1, W_SYMBOLS * symbols + W_DIGITS * digits + W_REPETITION * repetition)

A verify step drafts D-1 tokens (D: the draft tokens per step); each is accepted with
probability p, independently, so a step yields 1 + Binomial(D-1, p) tokens, mean 1 + (D-1)p.
The configured accept length L (--sim-accept-length) is the mean of free prose (score 0):

  p(text) = min((L - 1) / (D - 1) + SLOPE * score, P_MAX)   (never below the first term)

A prompt of token ids has no text: it scores 0 and accepts L on average (so a benchmark
of random token ids measures L). The expected accept length of a text is
1 + (D-1) * p(text) (`expected_accept_length`); the last step of a request may be cut
short by max_tokens, so a short request's measured mean is a little lower.
Figures at L 2.6, D 4 (token_samples.json): prose and creative writing 2.60-2.64, code
2.86-3.27, math and JSON 3.07-3.85, tables, number lists and repeated words 3.85 (P_MAX).
"""
import re

WORD_CHARS = 10
WORD_EXTRA = 3
SYMBOL_CHARS = 2
CHAT_TOKENS_PER_MESSAGE = 4

SYMBOLS = frozenset("{}[]()<>;:=_/\\|#*+-\"'`$%&^~@!?")
W_SYMBOLS = 1.2
W_DIGITS = 0.8
W_REPETITION = 1.0
SLOPE = 0.5
P_MAX = 0.95

# The pre-split of cl100k_base / o200k_base, with letters as [^\W\d_] (Python's re has no \p{L}).
_PIECE = re.compile(
    r"""'(?:[sdmt]|ll|ve|re)(?![^\W\d_])"""  # English contractions
    r"""|[^\r\n\w]?[^\W\d_]+"""  # a word, with one leading space or mark
    r"""|\d{1,3}"""  # numbers in groups of up to three digits
    r"""| ?[^\s\w]+[\r\n]*|_+"""  # a run of symbols
    r"""|\s*[\r\n]+|\s+(?!\S)|\s+""",  # newlines, indentation, spaces
    re.IGNORECASE)


def pieces(text):
    return _PIECE.findall(text)


def _piece_tokens(piece):
    core = piece.strip()
    if not core:
        return 1
    letters = sum(1 for c in core if c.isalpha())
    if letters:
        extra = max(0, letters - WORD_CHARS)
        return 1 + -(-extra // WORD_EXTRA)
    if core.isdigit():
        return 1
    return -(-len(core) // SYMBOL_CHARS)


def prompt_tokens(text):
    """Tokens a BPE tokenizer would give `text` (at least 1), by the model above."""
    return max(1, sum(_piece_tokens(p) for p in pieces(text)))


def chat_prompt_tokens(contents):
    """Tokens of a chat prompt: every message's text plus its role markers."""
    return max(1, sum(prompt_tokens(c) for c in contents) + CHAT_TOKENS_PER_MESSAGE * len(contents))


def features(text):
    """(symbols, digits, repetition) of `text`, each a share in [0, 1]."""
    chars = [c for c in text if not c.isspace()]
    if not chars:
        return 0.0, 0.0, 0.0
    symbols = sum(1 for c in chars if c in SYMBOLS) / len(chars)
    digits = sum(1 for c in chars if c.isdigit()) / len(chars)
    words = [p.strip().lower() for p in pieces(text) if p.strip()]
    bigrams = list(zip(words, words[1:]))
    seen, repeated = set(), 0
    for b in bigrams:
        if b in seen:
            repeated += 1
        seen.add(b)
    repetition = repeated / len(bigrams) if bigrams else 0.0
    return symbols, digits, repetition


def predictability(text):
    """The score in [0, 1]; None (a prompt of token ids) scores 0."""
    if text is None:
        return 0.0
    symbols, digits, repetition = features(text)
    return min(1.0, W_SYMBOLS * symbols + W_DIGITS * digits + W_REPETITION * repetition)


def accept_probability(accept_length, draft_tokens, score):
    """Probability that one drafted token is accepted, for a text of predictability `score`."""
    if draft_tokens < 2:
        return 0.0
    base = min(max((accept_length - 1.0) / (draft_tokens - 1), 0.0), 1.0)
    return min(base + SLOPE * score, max(P_MAX, base))


def expected_accept_length(accept_length, draft_tokens, text):
    """Mean tokens a verify step yields for a request continuing `text` (None: token ids)."""
    return 1.0 + (draft_tokens - 1) * accept_probability(accept_length, draft_tokens, predictability(text))
