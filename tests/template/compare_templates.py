#!/usr/bin/python3
"""Renders every chat template of a folder with every sample conversation, with and without the generation
prompt, through `strata template` and through render_reference.py (Python's jinja2 as transformers sets it up),
and checks that the bytes are the same, or that both raise the same error: the same kind (error_kind below) and,
but for syntax errors, the same message. Prints a diff of the first difference of each mismatch and every case
where both raise, with what each says; exits 1 when any case differs.

usage: compare_templates.py STRATA TEMPLATE_DIR SAMPLE_DIR
"""
import difflib
import os
import re
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


# jinja2's side: "render_reference: CLASS: MESSAGE". strata's: "strata: error: chat template line N, column C: " then
# "CLASS: MESSAGE" (the renderer names the Python exception it stands for), "raise_exception: MESSAGE", or, from
# the parser, a message of its own with no class.
JINJA2_ERROR = re.compile(r"render_reference: (\w+): (.*)", re.S)
STRATA_ERROR = re.compile(r"strata: error: chat template line \d+, column \d+: "
                          r"(?:(raise_exception|\w+Error): )?(.*)", re.S)
# jinja2's classes for a template that does not compile; strata finds the same problems while parsing.
JINJA2_SYNTAX = {"TemplateSyntaxError", "TemplateAssertionError"}
# The kinds whose message is not compared, each with the reason. A kind missing here compares messages too.
MESSAGE_NOT_COMPARED = {
    "syntax": "strata's parser words its own messages (what was expected, the opening tag of an unclosed block) "
              "and jinja2's compiler its own; the kind and the line are what a template author needs from both",
}


def error_kind(renderer, text):
    """(kind, message) of a failed render: the Python exception's class ("TypeError", "UndefinedError", ...),
    "raise_exception" for the template's own error (jinja2 raises a plain TemplateError for it), "syntax" for a
    template that does not parse, "unrecognised" for anything else (a crash, a bad file: never a pass)."""
    if renderer == "jinja2":
        m = JINJA2_ERROR.fullmatch(text)
        if m is None:
            return "unrecognised", text
        cls, message = m.groups()
        if cls == "TemplateError":
            return "raise_exception", message
        return ("syntax" if cls in JINJA2_SYNTAX else cls), message
    m = STRATA_ERROR.fullmatch(text)
    if m is None:
        return "unrecognised", text
    cls, message = m.groups()
    return (cls if cls is not None else "syntax"), message


def same_error(ref_err, err):
    """Whether both renderers raised the same error; the kind both raised (or both kinds, when they differ)."""
    ref_kind, ref_message = error_kind("jinja2", ref_err)
    kind, message = error_kind("strata", err)
    if ref_kind != kind or kind == "unrecognised":
        return False, f"jinja2 {ref_kind}, strata {kind}"
    if kind not in MESSAGE_NOT_COMPARED and ref_message != message:
        return False, f"{kind}, with different messages"
    return True, kind


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
                    agree, kind = same_error(ref_err, err)
                    if agree:
                        both_error += 1
                        print(f"both raise  {case}  [{kind}]\n      jinja2: {ref_err}\n      strata: {err}")
                    else:
                        failures.append(case)
                        print(f"MISMATCH    {case}  (both raise, not the same error: {kind})\n"
                              f"      jinja2: {ref_err}\n      strata: {err}")
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
    print(f"\n{cases} cases: {same} byte-identical, {both_error} raising the same error in both, "
          f"{len(failures)} differing")
    return 1 if failures or cases == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
