"""Stand-in for the get-pip script ansible-test downloads (from a host CI cannot reach).

ansible-test runs `python get_pip.py [pip args]` to put pip into its sanity
venvs. This bootstraps pip from the interpreter's own ensurepip, then installs
the requested packages from the ordinary package index.
"""
import subprocess
import sys

DROP = {"--no-setuptools", "--no-wheel"}

subprocess.check_call([sys.executable, "-m", "ensurepip", "--upgrade"])
args = [a for a in sys.argv[1:] if a not in DROP]
if args:
    subprocess.check_call([sys.executable, "-m", "pip", "install"] + args)
