#!/usr/bin/python3
"""Renders a chat template with Python's jinja2 the way Hugging Face transformers does (apply_chat_template with
tokenize=False), taking the same arguments as `strata template`, so that the two outputs can be compared byte
for byte.

The environment is transformers': ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True) with the
loopcontrols extension and a `generation` block tag that renders its body; tojson is json.dumps with
ensure_ascii=False and the indent, separators and sort_keys arguments; raise_exception and strftime_now are
globals. The context: messages, tools (None unless --tools), documents (None), add_generation_prompt, bos_token and
eos_token ("" unless --var sets them), then each --var.

Exit 0 with the rendered text on stdout, or 2 with the error on stderr. Run it with /usr/bin/python3 (Debian's
python3-jinja2).
"""
import argparse
import datetime
import json
import sys

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


class GenerationTag(Extension):
    """{% generation %}...{% endgeneration %}: transformers marks the assistant's tokens with it; the text is the body."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.CallBlock(self.call_method("_body", []), [], [], body).set_lineno(lineno)

    def _body(self, caller):
        return caller()


def make_environment(now):
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return (now or datetime.datetime.now()).strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[GenerationTag, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def parse_now(text):
    value = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    if value.tzinfo is not None:
        value = value.astimezone().replace(tzinfo=None)  # local time, as strata shows a zoned --now
    return value


def render_case(argv):
    """Renders one case given `strata template`'s arguments: (exit code, the bytes, the error text)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--template", required=True)
    ap.add_argument("--messages", required=True)
    ap.add_argument("--tools")
    ap.add_argument("--add-generation-prompt", action="store_true")
    ap.add_argument("--var", action="append", default=[])
    ap.add_argument("--now")
    args = ap.parse_args(argv)

    with open(args.template, encoding="utf-8") as f:
        source = f.read()
    with open(args.messages, encoding="utf-8") as f:
        messages = json.load(f)
    tools = None
    if args.tools:
        with open(args.tools, encoding="utf-8") as f:
            tools = json.load(f)
    context = {
        "messages": messages,
        "tools": tools,
        "documents": None,
        "add_generation_prompt": args.add_generation_prompt,
        "bos_token": "",
        "eos_token": "",
    }
    for item in args.var:
        key, _, value = item.partition("=")
        try:
            context[key] = json.loads(value)
        except ValueError:
            context[key] = value

    try:
        env = make_environment(parse_now(args.now) if args.now else None)
        text = env.from_string(source).render(**context)
    except Exception as e:  # every failure of the template is an outcome to compare, not a crash
        return 2, b"", f"render_reference: {type(e).__name__}: {e}"
    return 0, text.encode("utf-8"), ""


def main():
    rc, out, err = render_case(sys.argv[1:])
    if err:
        print(err, file=sys.stderr)
    sys.stdout.buffer.write(out)
    return rc


if __name__ == "__main__":
    sys.exit(main())
