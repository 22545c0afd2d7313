"""prometheus_client's view of a /metrics body: `python prom_reference.py MODE < metrics.txt`.

Run with the real prometheus_client importable (the pinned vLLM's, build/vllm-real, on
PYTHONPATH). Prints JSON:
  families  {name: {"type": ..., "samples": [[sample name, labels, value], ...]}} as
            prometheus_client.parser.text_string_to_metric_families reads the body
  rebuilt   the body prometheus_client's generate_latest writes for the same counters and
            gauges (values set from the parsed samples; `_created` values replaced by T)
MODE: `plain` (a default registry, as vLLM with one API server) or `multiprocess`
(MultiProcessCollector, as SGLang: gauges in mode mostrecent).
"""
import json
import os
import re
import sys
import tempfile


def main(mode):
    body = sys.stdin.read()
    if mode == "multiprocess":  # read by prometheus_client when it is imported
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="prom-reference-")
    from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest
    from prometheus_client.parser import text_string_to_metric_families

    families = {}
    for fam in text_string_to_metric_families(body):
        families[fam.name] = {"type": fam.type, "documentation": fam.documentation,
                              "samples": [[s.name, s.labels, s.value] for s in fam.samples]}

    registry = CollectorRegistry()
    for name, fam in families.items():
        if fam["type"] == "gauge" and name.endswith("_created") and families.get(name[:-8], {}).get("type") == "counter":
            continue  # written by the counter itself
        main_samples = [s for s in fam["samples"] if not s[0].endswith("_created")]
        labelnames = sorted(main_samples[0][1]) if main_samples else []
        if fam["type"] == "counter":
            metric = Counter(name, fam["documentation"], labelnames, registry=registry)
            for unused, labels, value in main_samples:
                (metric.labels(**labels) if labelnames else metric).inc(value)
        elif fam["type"] == "gauge":
            extra = {"multiprocess_mode": "mostrecent"} if mode == "multiprocess" else {}
            metric = Gauge(name, fam["documentation"], labelnames, registry=registry, **extra)
            for unused, labels, value in main_samples:
                (metric.labels(**labels) if labelnames else metric).set(value)
    if mode == "multiprocess":
        from prometheus_client import multiprocess
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
    text = generate_latest(registry).decode("utf-8")
    text = re.sub(r"^(\S+_created(?:\{[^}]*\})?) \S+$", r"\1 T", text, flags=re.M)
    json.dump({"families": families, "rebuilt": text}, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
