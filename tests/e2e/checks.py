"""checks.py - what the e2e check scripts share: running a command, and
recording each check's outcome (printed as it is made; `failures` collects
the failed ones for the script's exit status)."""
import os
import subprocess

failures = []


def run(cmd, env=None):
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run(cmd, capture_output=True, text=True, env=e, stdin=subprocess.DEVNULL)
    return p.returncode, (p.stdout + p.stderr).strip()


def expect(cond, what, text=""):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)
        if text:
            print("     " + text.replace("\n", "\n     ")[-2000:])
