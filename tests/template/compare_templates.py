#!/usr/bin/python3
"""Renders every chat template of a folder with every sample conversation, with and without the generation
prompt, through `strata template` and through render_reference.py (Python's jinja2 as transformers sets it up),
and checks that the bytes are the same, or that both fail. Prints a diff of the first difference of each
mismatch; exits 1 when any case differs.

usage: compare_templates.py STRATA TEMPLATE_DIR SAMPLE_DIR
"""
import difflib
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
os.environ["TZ"] = "UTC"  # both renderers read --now in the same zone
time.tzset()
import render_reference  # noqa: E402  (after the zone is set)
FIXED = ["--var", "bos_token=<s>", "--var", "eos_token=</s>", "--now", "2026-03-14T15:09:26"]


def samples(sample_dir):
    for name in sorted(os.listdir(sample_dir)):
        if name.endswith(".messages.json"):
            stem = name[: -len(".messages.json")]
            tools = os.path.join(sample_dir, stem + ".tools.json")
            yield stem, os.path.join(sample_dir, name), tools if os.path.exists(tools) else None


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, env=dict(os.environ, TZ="UTC"))
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace").strip()


def show_diff(expected, got):
    exp = expected.decode("utf-8", "replace").splitlines(keepends=True)
    out = got.decode("utf-8", "replace").splitlines(keepends=True)
    lines = list(difflib.unified_diff(exp, out, "jinja2", "strata", n=2))
    for line in lines[:40]:
        sys.stdout.write("      " + repr(line)[1:-1] + "\n")
    if len(lines) > 40:
        print(f"      ... ({len(lines) - 40} more diff lines)")


def main():
    strata, template_dir, sample_dir = sys.argv[1:4]
    cases = same = both_error = 0
    failures = []
    for tname in sorted(os.listdir(template_dir)):
        if not tname.endswith(".jinja"):
            continue
        template = os.path.join(template_dir, tname)
        for stem, messages, tools in samples(sample_dir):
            for gen in (False, True):
                args = ["--template", template, "--messages", messages] + FIXED
                if tools:
                    args += ["--tools", tools]
                if gen:
                    args.append("--add-generation-prompt")
                case = f"{tname} x {stem}{' +gen' if gen else ''}"
                cases += 1
                ref_rc, ref_out, ref_err = render_reference.render_case(args)  # in this process: no startup
                rc, out, err = run([strata, "template"] + args)
                if ref_rc != 0 and rc != 0:
                    both_error += 1
                    print(f"both error  {case}\n      jinja2: {ref_err}\n      strata: {err}")
                elif ref_rc == 0 and rc == 0 and out == ref_out:
                    same += 1
                else:
                    failures.append(case)
                    print(f"MISMATCH    {case}")
                    if ref_rc != 0:
                        print(f"      jinja2 failed: {ref_err}\n      strata rendered {len(out)} bytes")
                    elif rc != 0:
                        print(f"      strata failed: {err}")
                    else:
                        show_diff(ref_out, out)
    print(f"\n{cases} cases: {same} byte-identical, {both_error} failing in both, {len(failures)} differing")
    return 1 if failures or cases == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
