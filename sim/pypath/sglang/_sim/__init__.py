"""The simulated SGLang server: one job a module (see server.py for the flow)."""
