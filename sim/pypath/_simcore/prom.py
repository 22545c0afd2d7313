"""Prometheus text exposition as prometheus_client 0.26.0 writes it (both engines' /metrics).

Real SGLang and vLLM serve /metrics with prometheus_client's `generate_latest`
(prometheus_client/exposition.py): a counter's HELP and TYPE lines carry the `_total` name
(`# TYPE vllm:generation_tokens_total counter`), label pairs are sorted by name, label
values escape backslash, newline and double quote, and values are written by
utils.py `floatToGoString`. A registry without multiprocess mode (vLLM with one API server)
adds a `NAME_created` gauge family after each counter family, one sample per series (the
time the series was created); SGLang's MultiProcessCollector (srt/utils/common.py
add_prometheus_middleware) writes none. tests/sim/test_sim_engines_text.py parses both
simulators' /metrics with prometheus_client's own parser and compares families with
generate_latest's output.
"""
import math


def float_to_go(value):
    """prometheus_client/utils.py floatToGoString."""
    d = float(value)
    if d == math.inf:
        return "+Inf"
    if d == -math.inf:
        return "-Inf"
    if math.isnan(d):
        return "NaN"
    s = repr(d)
    dot = s.find(".")
    if d > 0 and dot > 6:  # Go switches to exponents sooner than Python
        mantissa = "%s.%s%s" % (s[0], s[1:dot], s[dot + 1:])
        return "%se+%02d" % (mantissa.rstrip("0."), dot - 1)
    return s


def _escape(value):
    return str(value).replace("\\", r"\\").replace("\n", r"\n").replace('"', r'\"')


def _sample(name, labels, value):
    pairs = ",".join('%s="%s"' % (k, _escape(v)) for k, v in sorted(labels.items()))
    return "%s%s %s" % (name, "{%s}" % pairs if pairs else "", float_to_go(value))


class Exposition:
    """Families in the order added; text() is the /metrics body."""

    def __init__(self, created=None):
        """created: the series' creation time (seconds since the epoch) for `_created`
        families, or None for a multiprocess registry (no `_created`)."""
        self.created = created
        self.lines = []

    def _head(self, name, kind, help_):
        self.lines.append("# HELP %s %s" % (name, help_.replace("\\", r"\\").replace("\n", r"\n")))
        self.lines.append("# TYPE %s %s" % (name, kind))

    def gauge(self, name, help_, samples):
        """samples: [(labels dict, value)]."""
        self._head(name, "gauge", help_)
        self.lines.extend(_sample(name, labels, value) for labels, value in samples)

    def counter(self, name, help_, samples):
        """name without `_total` (as prometheus_client keeps it); samples: [(labels, value)]."""
        self._head(name + "_total", "counter", help_)
        self.lines.extend(_sample(name + "_total", labels, value) for labels, value in samples)
        if self.created is not None:
            self._head(name + "_created", "gauge", help_)
            self.lines.extend(_sample(name + "_created", labels, self.created) for labels, unused in samples)

    def text(self):
        return "\n".join(self.lines) + "\n"
