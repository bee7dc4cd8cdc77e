# `strata template`: writes exactly the rendered bytes (no newline added), takes --tools, --var (JSON or a plain
# string), --add-generation-prompt and --now, and exits 2 naming the problem for bad files, bad JSON and template
# errors. Run by ctest with -DSTRATA=<exe> -DSRC=<source dir> -DDATA=<tests/data> -DWORK=<scratch dir>.
include(${SRC}/tests/cli/common.inc)

file(WRITE ${WORK}/messages.json [=[[{"role": "user", "content": "Héllo \"you\""}]]=])
file(WRITE ${WORK}/tools.json [=[[{"type": "function", "function": {"name": "f", "parameters": {"b": 1, "a": 2}}}]]=])
file(WRITE ${WORK}/chat.jinja [=[{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}
{%- if tools %}|{{ tools[0].function|tojson }}{% endif %}
{%- if add_generation_prompt %}<assistant>{% endif %}{{ bos_token }}{{ extra.k if extra is defined }}{{ strftime_now('|%Y-%m-%d') }}]=])

strata_run(0 OUT out ARGS template --template chat.jinja --messages messages.json --now 2026-01-15T09:30:00)
if(NOT out STREQUAL "<user>Héllo \"you\"|2026-01-15")
  message(FATAL_ERROR "plain render: [${out}]")
endif()
strata_run(0 OUT out ARGS template --template chat.jinja --messages messages.json --tools tools.json
           --add-generation-prompt --var bos_token=<s> --var [=[extra={"k": 7}]=] --now 2026-01-15T09:30:00)
if(NOT out STREQUAL [=[<user>Héllo "you"|{"name": "f", "parameters": {"b": 1, "a": 2}}<assistant><s>7|2026-01-15]=])
  message(FATAL_ERROR "render with tools and vars: [${out}]")
endif()

strata_run(2 ERR err ARGS template --template missing.jinja --messages messages.json)
expect_contains("${err}" "cannot read --template 'missing.jinja'")
file(WRITE ${WORK}/bad.json "[{\"role\": ")
strata_run(2 ERR err ARGS template --template chat.jinja --messages bad.json)
expect_contains("${err}" "--messages 'bad.json' is not valid JSON")
file(WRITE ${WORK}/object.json "{}")
strata_run(2 ERR err ARGS template --template chat.jinja --messages object.json)
expect_contains("${err}" "must hold a JSON array")
file(WRITE ${WORK}/broken.jinja "ok\n{% for m in messages %}{{ m|nosuch }}{% endfor %}")
strata_run(2 ERR err ARGS template --template broken.jinja --messages messages.json)
expect_contains("${err}" "chat template line 2, column 29: unknown filter 'nosuch'")
file(WRITE ${WORK}/raise.jinja "{{ raise_exception('no system role') }}")
strata_run(2 ERR err ARGS template --template raise.jinja --messages messages.json)
expect_contains("${err}" "raise_exception: no system role")
strata_run(2 ERR err ARGS template --template chat.jinja --messages messages.json --now yesterday)
expect_contains("${err}" "--now 'yesterday' is not an ISO time")
strata_run(2 ERR err ARGS template --messages messages.json)
expect_contains("${err}" "needs --template FILE")
