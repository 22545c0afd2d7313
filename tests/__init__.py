"""The project's tests: a regular package, so that `tests.support` is this checkout's even where
site-packages holds a stray `tests` package (the real-GPU suite runs under a system python3)."""
